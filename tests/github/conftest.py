"""The fixture every Action test shares: the fake GitHub API, serving for one test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.helpers.fake_github import FakeGitHub


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    with FakeGitHub() as server:
        yield server

"""GitHub Actions workflow commands and files: annotations, step outputs, the job summary.

Everything writes to a stream or to the files the runner names in the environment, so
tests run it with temporary files.
"""

from __future__ import annotations

import os
import secrets
import sys
from collections.abc import Mapping
from typing import TextIO

MAX_ANNOTATIONS = 10  # GitHub keeps 10 error and 10 warning annotations per step
SUMMARY_LIMIT = 900 * 1024  # bytes; GitHub aborts the upload of a step summary above 1024 KiB


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(name: str, message: str, out: TextIO | None = None, **props: str | None) -> None:
    """Print ``::name prop=value,...::message`` with GitHub's escaping."""
    given = ",".join(f"{k}={escape_property(v)}" for k, v in props.items() if v)
    stream = out or sys.stdout
    stream.write(f"::{name}{' ' + given if given else ''}::{escape_data(message)}\n")


def warning(message: str, out: TextIO | None = None) -> None:
    command("warning", message, out)


def set_outputs(values: Mapping[str, str], env: Mapping[str, str] | None = None) -> None:
    """Append ``key=value`` (or a heredoc for multi-line values) to $GITHUB_OUTPUT."""
    path = (env if env is not None else os.environ).get("GITHUB_OUTPUT")
    if not path:
        return
    with open(path, "a", encoding="utf-8") as f:
        for key, value in values.items():
            if "\n" in value or "\r" in value:
                delimiter = f"npu_gate_{secrets.token_hex(8)}"  # cannot occur in the value
                f.write(f"{key}<<{delimiter}\n{value}\n{delimiter}\n")
            else:
                f.write(f"{key}={value}\n")


def append_summary(markdown: str, env: Mapping[str, str] | None = None) -> bool:
    """Append Markdown to $GITHUB_STEP_SUMMARY; False when the runner gave no summary file."""
    path = (env if env is not None else os.environ).get("GITHUB_STEP_SUMMARY")
    if not path:
        return False
    with open(path, "a", encoding="utf-8") as f:
        f.write(markdown if markdown.endswith("\n") else markdown + "\n")
    return True

"""Importing the user's module:function from a contract folder."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from npu_gate.errors import ModelError
from npu_gate.model.user_code import import_callable


def _module(folder: Path, name: str, value: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.py").write_text(f"def build():\n    return {value}\n", encoding="utf-8")


def test_each_contract_folder_gets_its_own_module_of_a_shared_name(tmp_path: Path) -> None:
    _module(tmp_path / "a", "net_under_test", 1)
    _module(tmp_path / "b", "net_under_test", 2)
    try:
        assert import_callable("net_under_test:build", [tmp_path / "a"], "model.torch.factory")() == 1
        assert import_callable("net_under_test:build", [tmp_path / "b"], "model.torch.factory")() == 2
    finally:
        sys.modules.pop("net_under_test", None)


def test_an_installed_package_is_imported_as_it_is_never_evicted(tmp_path: Path) -> None:
    # A factory such as torchvision.models:resnet18 names an installed package; evicting it from
    # sys.modules and importing it again would re-run its extension modules' registration.
    # (the standard library is refused: onnx stands for such a package)
    import onnx.helper

    before = sys.modules["onnx"], sys.modules["onnx.helper"]
    found = import_callable("onnx.helper:make_node", [tmp_path], "model.torch.factory")
    assert found is onnx.helper.make_node
    assert (sys.modules["onnx"], sys.modules["onnx.helper"]) == before


def test_a_missing_callable_names_the_contract_key(tmp_path: Path) -> None:
    _module(tmp_path, "net_without", 1)
    try:
        with pytest.raises(ModelError) as raised:
            import_callable("net_without:nope", [tmp_path], "metric.callable")
        assert raised.value.problems == ["metric.callable: 'net_without' has no callable 'nope'"]
    finally:
        sys.modules.pop("net_without", None)

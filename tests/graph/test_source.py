"""Where a node came from in the PyTorch code (graph.source): the dynamo exporter's metadata and
TorchScript scope names, parsed as text; stable keys. Real exports: tests/model/test_source_export.py."""

from __future__ import annotations

from pathlib import Path

from onnx import NodeProto, StringStringEntryProto, helper

from npu_gate.graph.source import (
    describe,
    in_repository,
    node_source,
    relative_file,
    repository_root,
    stable_keys,
    torchscript_module_path,
)

SITE = "/home/u/.venv/lib/python3.11/site-packages/torch/nn/modules/conv.py"


def _node(name: str = "node_conv2d_1", op: str = "Conv", **props: str) -> NodeProto:
    node = helper.make_node(op, ["x"], ["y"], name=name)
    for key, value in props.items():
        node.metadata_props.append(StringStringEntryProto(key=key.replace("__", "."), value=value))
    return node


def _dynamo(file: str, stack: str) -> NodeProto:
    return _node(**{
        "pkg__torch__onnx__stack_trace": stack,
        "pkg__torch__onnx__name_scopes": "['', 'up', 'up.conv', 'conv2d_1']",
        "pkg__torch__onnx__class_hierarchy": "['models.zoo.TinyUNet', 'models.zoo.Up', "
                                             "'torch.nn.modules.conv.Conv2d', 'aten.conv2d.default']",
    })


def test_the_innermost_frame_outside_libraries_is_the_user_s(tmp_path: Path) -> None:
    (tmp_path / "models").mkdir()
    stack = (f'File "{tmp_path}/models/zoo.py", line 25, in forward\n    return self.up2(self.up(x))\n'
             f'  File "{tmp_path}/models/zoo.py", line 12, in forward\n    y = self.conv(x)\n'
             f'  File "{SITE}", line 565, in forward\n    return self._conv_forward(input, self.weight, self.bias)')
    source = node_source(_dynamo("zoo", stack), tmp_path)
    assert source == {"file": "models/zoo.py", "line": 12, "function": "forward", "code": "y = self.conv(x)",
                      "module_path": "up.conv", "module_class": "torch.nn.modules.conv.Conv2d",
                      "root_class": "models.zoo.TinyUNet"}
    assert describe(source) == "models/zoo.py:12 TinyUNet.up.conv (Conv2d)"


def test_a_file_from_another_machine_is_found_by_its_tail_under_the_root(tmp_path: Path) -> None:
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "zoo.py").write_text("")
    assert relative_file("/home/ci/checkout/models/zoo.py", tmp_path) == "models/zoo.py"
    assert relative_file("/home/ci/checkout/other.py", tmp_path) == "/home/ci/checkout/other.py"
    assert relative_file("/x/../models/zoo.py", tmp_path) == "/x/../models/zoo.py"  # never walks up
    assert relative_file("/abs/zoo.py", None) == "/abs/zoo.py"


def test_only_library_frames_give_no_line_but_the_module_is_still_known() -> None:
    source = node_source(_dynamo("zoo", f'File "{SITE}", line 565, in forward\n    return x'), None)
    assert source is not None and (source["file"], source["line"], source["module_path"]) == (None, None, "up.conv")


def test_the_older_namespace_form() -> None:
    node = _node(namespace=": models.zoo.TinyUNet/up: models.zoo.Up/upsample_bilinear2d: aten.upsample_bilinear2d.vec")
    source = node_source(node, None)
    assert source is not None
    assert (source["module_path"], source["module_class"], source["root_class"]) == (
        "up", "models.zoo.Up", "models.zoo.TinyUNet")


def test_torchscript_scope_names() -> None:
    assert torchscript_module_path("/features/features.0/features.0.2/HardSwish") == "features.0.2"
    assert torchscript_module_path("/up/conv/Conv") == "up.conv"
    assert torchscript_module_path("/Relu") == ""
    source = node_source(_node("/up/conv/Conv"), None)
    assert source is not None and source["module_path"] == "up.conv" and source["file"] is None
    assert describe(source) == "up.conv"
    assert node_source(_node("Conv_12"), None) is None  # another producer's name says nothing


def test_hostile_metadata_is_not_parsed() -> None:
    huge = "['', " + "'a', " * 10_000 + "'x']"
    assert node_source(_node(pkg__torch__onnx__name_scopes=huge), None) is None
    assert node_source(_node(pkg__torch__onnx__stack_trace='File "x.py", line 1, in f\n' * 5_000), None) is None


def test_stable_keys_count_per_module_and_op_type() -> None:
    keys = stable_keys(["Conv", "Resize", "Conv", "Resize", "Add", "Add"],
                       ["up", "up", "up", "up2", "", None], ["a", "b", "c", "d", "e", "f"])
    assert keys == ["up/Conv#0", "up/Resize#0", "up/Conv#1", "up2/Resize#0", "/Add#0", "f"]


def test_repository_root(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "contracts" / "unet").mkdir(parents=True)
    assert repository_root(tmp_path / "contracts" / "unet") == tmp_path.resolve()


def _frame(file: str, line: str = "3") -> NodeProto:
    return _dynamo("zoo", f'File "{file}", line {line}, in forward\n    y = self.conv(x)\n')


def test_a_line_number_of_thousands_of_digits_drops_the_frame(tmp_path: Path) -> None:
    source = node_source(_frame(f"{tmp_path}/models/zoo.py", "9" * 5_000), tmp_path)  # int() would raise
    assert source is not None and (source["file"], source["line"], source["module_path"]) == (None, None, "up.conv")
    kept = node_source(_frame(f"{tmp_path}/models/zoo.py", "9" * 9), tmp_path)
    assert kept is not None and (kept["file"], kept["line"]) == ("models/zoo.py", 999_999_999)


def test_files_outside_the_repository_keep_their_name_but_no_line(tmp_path: Path) -> None:
    for file in ("/etc/passwd", "../../etc/passwd", "models/a\x00b.py", "C:/Windows/win.ini"):
        source = node_source(_frame(file, "1"), tmp_path)
        assert source is not None and (source["file"], source["line"]) == (file, None), file
        assert describe(source) == f"{file} (outside the repository) TinyUNet.up.conv (Conv2d)"


def test_names_no_file_system_holds_are_never_looked_up_and_shown_shortened(tmp_path: Path) -> None:
    # a name longer than NAME_MAX, a path longer than PATH_MAX: the file system would raise ENAMETOOLONG
    for file in (f"{tmp_path}/{'a' * 300}.py", "/abcdefgh" * 600 + ".py", f"models/{'b' * 300}.py"):
        assert relative_file(file, tmp_path) == file
        source = node_source(_frame(file), tmp_path)
        assert source is not None and source["line"] is None
        assert source["file"] == file[:299] + "…"
        assert describe(source) == f"{file[:299]}… (outside the repository) TinyUNet.up.conv (Conv2d)"


def test_in_repository_is_decided_from_the_text() -> None:
    assert in_repository("models/zoo.py") and in_repository("zoo.py")
    for file in ("", "/abs.py", "../x.py", "a/../../x.py", "a\\..\\x.py", "c:/x.py", "a\x00b.py", "a\x1b[31m.py",
                 "a" * 256 + ".py", "a/" * 2_100):
        assert not in_repository(file), file

"""Annotations (action.annotate): on the PyTorch line that made a node when that file is in the
repository, else on the contract; GitHub's 10 slots spread over models and rules (issue 18)."""

from __future__ import annotations

import io
from pathlib import Path

from npu_gate.action import annotate
from npu_gate.compare.report import ModelReport
from npu_gate.result.types import GateResult, NodeResult, make_finding


def _result(name: str, cpu_nodes: int, source_file: str | None = None) -> GateResult:
    result = GateResult(name=name, verdict="fail", profile={"name": "demo", "evidence": "illustrative"},
                        versions={}, model={})
    for i in range(cpu_nodes):
        node = f"{name}_relu{i}"
        source = None
        if source_file is not None:
            source = {"file": source_file, "line": 10 + i, "function": "forward", "code": "x = self.act(x)",
                      "module_path": f"act{i}", "module_class": "torch.nn.modules.activation.ReLU",
                      "root_class": "models.zoo.Net"}
        result.nodes.append(NodeResult(node, "Relu", "", [], [], {}, [], "cpu", ["op Relu not in profile demo"], i,
                                       source=source))
        result.findings.append(make_finding("unsupported-op", "op Relu not in profile demo", node=node,
                                            op_type="Relu"))
    return result


def _annotations(models: list[ModelReport], workspace: Path) -> list[str]:
    out = io.StringIO()
    annotate(models, workspace, out)
    return out.getvalue().splitlines()


def test_two_models_share_the_ten_slots(tmp_path: Path) -> None:
    a = ModelReport("a", result=_result("a", 12), file=str(tmp_path / "a" / "npu-gate.json"))
    b = ModelReport("b", result=_result("b", 3), file=str(tmp_path / "b" / "npu-gate.json"))
    errors = [line for line in _annotations([a, b], tmp_path) if line.startswith("::error ")]
    assert len(errors) == 10
    assert sum("file=b/npu-gate.json" in line for line in errors) == 3  # b's three are all there
    assert [line.split("::")[2].split(":")[0] for line in errors[:4]] == ["a", "b", "a", "b"]


def test_a_finding_is_annotated_on_the_pytorch_line_in_the_repository(tmp_path: Path) -> None:
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "zoo.py").write_text("# the user's model\n")
    inside = ModelReport("a", result=_result("a", 1, "models/zoo.py"), file=str(tmp_path / "a" / "npu-gate.json"))
    outside = ModelReport("b", result=_result("b", 1, "/usr/lib/other.py"), file=str(tmp_path / "b" / "npu-gate.json"))
    escaping = ModelReport("c", result=_result("c", 1, "../../etc/passwd"), file=str(tmp_path / "c" / "npu-gate.json"))
    lines = _annotations([inside, outside, escaping], tmp_path)
    assert lines[0].startswith("::error file=models/zoo.py,line=10,title=npu-gate error::a: unsupported-op [a_relu0]")
    assert lines[1].startswith("::error file=b/npu-gate.json,title=npu-gate error::b: unsupported-op")
    assert lines[2].startswith("::error file=c/npu-gate.json,title=npu-gate error::c: unsupported-op")


def test_a_source_file_no_file_system_holds_is_annotated_on_the_contract(tmp_path: Path) -> None:
    # a NUL byte (ValueError from resolve) and names longer than NAME_MAX / PATH_MAX (OSError):
    # a result read back from JSON may hold any text, with a line
    files = ["models/a\x00b.py", "a" * 300 + ".py", "abcdefgh/" * 600 + "x.py"]
    models = [ModelReport(f"m{i}", result=_result(f"m{i}", 1, file), file=str(tmp_path / f"m{i}" / "npu-gate.json"))
              for i, file in enumerate(files)]
    lines = _annotations(models, tmp_path)
    assert [line.split("::")[1] for line in lines] == [f"error file=m{i}/npu-gate.json,title=npu-gate error"
                                                       for i in range(3)]


def test_the_comment_keeps_the_model_folds_the_report_writes() -> None:
    from npu_gate.github import comment
    from npu_gate.render import report

    assert comment.MODEL_ICONS == report.MODEL_ICONS

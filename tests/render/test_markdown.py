"""The Markdown report: verdict first, the prediction sentence, escaping, golden files."""

from __future__ import annotations

import json
from pathlib import Path

import onnx
from onnx import TensorProto, helper

from npu_gate.contract.spec import load_contract
from npu_gate.pipeline import check_contract
from npu_gate.render import json_, markdown, text
from tests.helpers.common import Golden, RunCli, SaveModel, WriteContract
from tests.helpers.gate_models import seed_onnx

EVIL = "</details><img src=x onerror=alert(1)> @someone #12 | *x* `y` [z](http://e)"


def hostile_model() -> onnx.ModelProto:
    nodes = [helper.make_node("Relu", ["x"], [EVIL + "_out"], name=EVIL),
             helper.make_node("Sigmoid", [EVIL + "_out"], ["y"], name="\x1b[31mred\x1b[0m")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def strip_timings(report: str) -> str:
    return report.split("### Timings")[0]


def test_names_from_the_model_are_escaped(tmp_path: Path, run_cli: RunCli, save_model: SaveModel) -> None:
    path = save_model(hostile_model())
    run = run_cli("inspect", path, "--markdown", tmp_path / "r.md", "--json", tmp_path / "r.json")
    whole = (tmp_path / "r.md").read_text()
    # The partition map's Mermaid block has its own escaping (Mermaid's #NNN; entities), checked
    # in test_partition_map.py; the rest of the report is checked here.
    before, _, rest = whole.partition("```mermaid\n")
    block, _, after = rest.partition("\n```")
    report = before + after
    assert "<img" not in block and "`" not in block and "\x1b" not in block
    for raw in ("</details><img", "@someone", " #12", "[z](", "`y`", "*x*", "\x1b"):
        assert raw not in report
    assert "&#60;/details&#62;&#60;img src=x onerror=alert&#40;1&#41;&#62;" in report
    assert "&#64;someone" in report
    # Exactly the <details> we opened (the partition map's and the census'), each closed once.
    assert report.count("<details>") == 2 and report.count("</details>") == 2
    # The terminal summary does not pass escape sequences through either.
    assert "\x1b" not in run.out and "\\x1b[31mred" in run.out
    # The JSON keeps the real names.
    assert json.loads((tmp_path / "r.json").read_text())["nodes"][0]["name"] == EVIL


def test_report_starts_with_the_verdict_and_states_the_prediction(tmp_path: Path, save_model: SaveModel,
                                                                  write_contract: WriteContract) -> None:
    save_model(seed_onnx())
    doc = {"model": {"onnx": "model.onnx"}, "target": {"profile": "demo"},
           "inputs": [{"name": "images", "shape": [1, 3, 16, 16], "dtype": "float32"}]}
    report = markdown.render(check_contract(load_contract(write_contract(doc))))
    assert report.startswith("## ❌ npu-gate: **FAIL**")
    assert ("Static prediction against profile `demo` (illustrative): not a device compatibility result."
            in report)
    sections = [line for line in report.splitlines() if line.startswith("### ")]
    assert sections == ["### Summary", "### Findings", "### CPU fallback", "### Partitions",
                        "### Memory per NPU partition", "### Numerics", "### Gates", "### Suggested rewrites",
                        "### Review", "### Timings"]


def test_golden_reports(tmp_path: Path, save_model: SaveModel, write_contract: WriteContract, golden: Golden) -> None:
    save_model(seed_onnx())
    doc = {"name": "seed-onnx", "model": {"onnx": "model.onnx"}, "target": {"profile": "demo"},
           "inputs": [{"name": "images", "shape": [1, 3, 16, 16], "dtype": "float32"}],
           "gates": {"max_cpu_nodes": 0, "max_npu_partitions": 1},
           "waivers": [{"rule": "gate-exceeded", "reason": "tracked in #7", "expires": "2099-01-01"}]}
    result = check_contract(load_contract(write_contract(doc)))
    result.timings = {"total_s": 0.0}  # measured values are the one non-reproducible part
    result.versions = {"python": "X", "npu_gate": "X", "torch": None, "onnx": "X", "onnxruntime": "X"}
    golden("seed-onnx.md", markdown.render(result))
    golden("seed-onnx.txt", text.render(result))
    golden("seed-onnx.json", json_.render(result))


def test_report_readability(tmp_path: Path, run_cli: RunCli, save_model: SaveModel) -> None:
    """Shapes, attribute values, counts and long names as a reader wants them."""
    long_name = "L" * 3000
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    nodes = [helper.make_node("Constant", [], ["c"], name="c0",
                              value=helper.make_tensor("v", TensorProto.FLOAT, [], [3.0])),
             helper.make_node("Add", ["x", "c"], ["a"], name="add"),
             helper.make_node("Mystery", ["a"], ["m"], name=long_name, domain="custom.ops"),
             helper.make_node("Relu", ["m"], ["y"], name="relu")]
    graph = helper.make_graph(nodes, "g", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("custom.ops", 1)])
    run = run_cli("inspect", save_model(model), "--markdown", tmp_path / "r.md")
    report = (tmp_path / "r.md").read_text()
    # A scalar's shape is [] (not empty); a tensor known by name only is one marker, not "? ?".
    assert "<code>c</code> &#91;&#93; float32" in report
    assert "<code>a</code> (unknown)" not in report and "<code>a</code> 1&#215;4 float32" in report
    assert "<code>m</code> (unknown)" in report
    # A Constant's value as JSON, not a Python dict.
    value = '{"dtype": "float32", "dims": [], "values": [3.0]}'
    assert "value=" + "".join(f"&#{ord(ch)};" if ch in '{}"[]' else ch for ch in value) in report
    # The terminal cuts a 3000-character name where Markdown does (300 characters).
    line = next(line for line in run.out.splitlines() if "unsupported-op" in line)
    assert f"[{'L' * 299}…]: op custom.ops::Mystery not in profile demo" in line
    assert f"<code>{'L' * 299}&#8230;</code>" in report

    one = helper.make_model(helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="r")], "g", [x], [y]),
                            opset_imports=[helper.make_opsetid("", 17)])
    run = run_cli("inspect", save_model(one, "one.onnx"), "--markdown", tmp_path / "one.md")
    assert "\n  1 node: 0 npu, 1 cpu, 0 folded;" in run.out
    assert "<summary>Op census and shapes (1 node)</summary>" in (tmp_path / "one.md").read_text()


def test_terminal_numerics_line_names_the_output() -> None:
    from npu_gate.result.types import GateResult

    result = GateResult(name="m", verdict="pass", profile={"name": "demo", "evidence": "illustrative"},
                        versions={}, model={})
    result.numerics = [{"output": "13", "passed": True, "max_abs_err": 2e-7, "atol": 1e-4}]
    assert "\n  numerics (output 13): ok (max abs err 2e-07, atol 0.0001)\n" in text.render(result)


def test_findings_at_many_nodes_are_one_row_and_the_verdict_names_the_rules(save_model: SaveModel,
                                                                            write_contract: WriteContract) -> None:
    """300 nodes failing for one reason are one row naming the first few, so the gate's own
    errors stay in sight; the verdict line says which rules failed."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    nodes = [helper.make_node("Relu", [f"t{i}" if i else "x"], [f"t{i + 1}" if i < 11 else "y"], name=f"r{i}")
             for i in range(12)]
    save_model(helper.make_model(helper.make_graph(nodes, "g", [x], [y]), opset_imports=[helper.make_opsetid("", 17)]))
    doc = {"model": {"onnx": "model.onnx"}, "target": {"profile": "demo"}, "gates": {"max_cpu_nodes": 0},
           "inputs": [{"name": "x", "shape": [1, 4], "dtype": "float32"}]}
    report = markdown.render(check_contract(load_contract(write_contract(doc))))
    assert "\n\nFindings: 13 errors (12 `unsupported-op`, 1 `gate-exceeded`).\n\n" in report
    findings = report.split("### Findings\n\n")[1].split("\n\n")[0].splitlines()[2:]
    names = "12 nodes: " + ", ".join(f"<code>r{i}</code>" for i in range(5)) + " and 7 more"
    assert [[c.strip() for c in row.split("|")[1:-1]] for row in findings] == [
        ["error", "`unsupported-op`", names, "op Relu not in profile demo"],
        ["error", "`gate-exceeded`", "", "max&#95;cpu&#95;nodes: 12 exceeds the limit 0"],
    ]
    review = report.split("### Review\n\n")[1].split("\n\n")[1].splitlines()[2:]
    assert len(review) == 1 and review[0].startswith(f"| {names} | Relu ")


def test_sizes_show_the_exact_bytes_and_a_unit() -> None:
    from npu_gate.render.cells import size

    assert [size(v) for v in (None, 0, 1023, 1024, 1536, 12_288, 1_048_575, 5 * 2**30)] == [
        "unknown", "0", "1,023", "1,024 (1 KiB)", "1,536 (1.5 KiB)", "12,288 (12 KiB)", "1,048,575 (1 MiB)",
        "5,368,709,120 (5 GiB)"]
    assert size(32_768, signed=True) == "+32,768 (+32 KiB)" and size(-512, signed=True) == "-512"


def test_summary_says_whether_the_compared_outputs_matched() -> None:
    """The numerics stage's "ok" means it ran; the summary row also says how the outputs compared."""
    from npu_gate.result.types import GateResult, NumericsEntry

    result = GateResult(name="m", verdict="fail", profile={"name": "demo", "evidence": "illustrative"},
                        versions={}, model={}, stages={"numerics": {"status": "ok"}})
    check: NumericsEntry = {"max_abs_err": 0.01, "max_rel_err": 7.9, "atol": 1e-4, "rtol": 1e-3, "samples": 2}
    result.numerics = [{"output": "a", "passed": False, **check}, {"output": "b", "passed": True, **check}]
    assert "| Stage: numerics | ok, **1 of 2 outputs outside tolerance** |" in markdown.render(result)
    result.numerics = result.numerics[1:]
    assert "| Stage: numerics | ok, 1 output within tolerance |" in markdown.render(result)


def test_many_partitions_are_folded_away(save_model: SaveModel, write_contract: WriteContract) -> None:
    """Past 20 partitions their tables would push Numerics and Gates out of sight: folded, like the census."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    one = helper.make_tensor("one", TensorProto.FLOAT, [], [1.0])
    nodes = []
    for i in range(11):  # Add on the NPU, Relu on the CPU: 22 partitions, 21 tensors crossing
        nodes += [helper.make_node("Add", [f"r{i - 1}" if i else "x", "one"], [f"a{i}"], name=f"add{i}"),
                  helper.make_node("Relu", [f"a{i}"], [f"r{i}" if i < 10 else "y"], name=f"relu{i}")]
    graph = helper.make_graph(nodes, "g", [x], [y], initializer=[one])
    save_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    doc = {"model": {"onnx": "model.onnx"}, "target": {"profile": "demo"},
           "inputs": [{"name": "x", "shape": [1, 4], "dtype": "float32"}]}
    report = markdown.render(check_contract(load_contract(write_contract(doc))))
    assert "### Partitions" not in report
    folded = report.split("<details><summary>Partitions (11 cpu, 11 npu; 21 tensors crossing them)</summary>\n\n")[1]
    assert folded.startswith("| id   | device   | nodes   | which")
    table_end = folded.index("| 21   | cpu      | 1       | <code>relu10</code>")
    assert folded.index("\n\n</details>\n\n### Memory per NPU partition") > table_end
    last_row = folded.index("| 20          | 4         | 32                 | <code>a10</code>")
    assert folded.index("### Numerics") > last_row


def test_a_waived_gate_reads_waived_also_in_a_result_from_before_subjects(tmp_path: Path, save_model: SaveModel,
                                                                          write_contract: WriteContract) -> None:
    """Schema 1.5 results (merge, --baseline) have no findings[].subject: the gate's row still
    reads waived, its gate taken from the message as that version wrote it."""
    from npu_gate.result.read import result_from_dict

    save_model(seed_onnx())
    doc = {"name": "seed-onnx", "model": {"onnx": "model.onnx"}, "target": {"profile": "demo"},
           "inputs": [{"name": "images", "shape": [1, 3, 16, 16], "dtype": "float32"}],
           "gates": {"max_cpu_nodes": 0, "max_npu_partitions": 1},
           "waivers": [{"rule": "gate-exceeded", "reason": "tracked in #7", "expires": "2099-01-01"}]}
    now = check_contract(load_contract(write_contract(doc))).to_dict()
    old = json.loads(json.dumps(now)) | {"schema_version": "1.5"}
    for f in old["findings"]:
        f.pop("subject", None)
    rows = [line for line in markdown.render(result_from_dict(old)).splitlines() if line.startswith("| max")]
    assert rows == [line for line in markdown.render(result_from_dict(now)).splitlines() if line.startswith("| max")]
    assert [r.split("|")[4].strip() for r in rows] == ["~~fail~~ waived", "~~fail~~ waived", "pass", "pass", "pass"]

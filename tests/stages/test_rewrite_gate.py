"""Rewrites in a contract check: proof, suggestions, review table, device timings, task metric."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NoReturn

import numpy as np
import onnx
import pytest

from npu_gate.contract.spec import load_contract
from npu_gate.pipeline import check_contract
from npu_gate.render import markdown, text
from npu_gate.result.types import GateResult
from npu_gate.rewrites import REWRITES
from npu_gate.rewrites.base import Builder, Emitted, GraphView, Match, Rewrite
from tests.helpers import rewrite_zoo as zoo
from tests.helpers.common import RunCli, validate_result

# Runs Add, Mul, Div, Clip but not HardSwish: decompose-hardswish helps here.
ELEMENTWISE: dict[str, dict[str, Any]] = {"Conv": {}, "Add": {}, "Mul": {}, "Div": {}, "Clip": {}, "ReduceMean": {}}


def contract(tmp_path: Path, model: onnx.ModelProto, ops: dict[str, dict[str, Any]] | None = None,
             profile: str = "demo", **extra: Any) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "model.onnx").write_bytes(model.SerializeToString())
    if ops is not None:
        target = {"name": "test-npu", "description": "test", "source": "tests", "evidence": "illustrative", "ops": ops}
        (tmp_path / "profile.json").write_text(json.dumps(target))
        profile = "profile.json"
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    doc: dict[str, Any] = {"name": "net", "model": {"onnx": "model.onnx"}, "target": {"profile": profile},
           "inputs": [{"name": "x", "shape": shape, "dtype": "float32", "range": [-3, 3]}], **extra}
    path = tmp_path / "npu-gate.json"
    path.write_text(json.dumps(doc))
    return path


def check(path: Path) -> GateResult:
    result = check_contract(load_contract(path))
    validate_result(result.to_dict())
    return result


def figures(s: Mapping[str, Any]) -> tuple[int, int, int]:
    return (s["cpu_nodes"], s["npu_partitions"], s["cpu_partitions"])


def test_rewrite_moves_the_net_from_two_npu_partitions_to_one(tmp_path: Path) -> None:
    base = check(contract(tmp_path, zoo.hardswish(), ELEMENTWISE))
    assert figures(base.summary) == (1, 2, 1)
    path = contract(tmp_path, zoo.hardswish(), ELEMENTWISE, rewrites=["decompose-hardswish"],
                    gates={"max_cpu_nodes": 0, "max_npu_partitions": 1})
    result = check(path)
    assert result.verdict == "pass"
    assert figures(result.summary) == (0, 1, 0)
    assert result.stages["rewrites"] == {"status": "ok", "applied": ["decompose-hardswish (1 regions)"]}
    assert result.rewrite_check is not None
    assert figures(result.rewrite_check["before"]) == (1, 2, 1)
    assert figures(result.rewrite_check["after"]) == (0, 1, 0)
    assert (result.rewrite_check["before"]["node_count"], result.rewrite_check["after"]["node_count"]) == (3, 6)
    [entry] = result.rewrites
    assert entry["name"] == "decompose-hardswish" and entry["exact"] is True
    assert entry["nodes"] == ["hswish"]
    assert [(p["node"], p["placement"]) for p in entry["placement_before"]] == [("hswish", "cpu")]
    assert [(p["node"], p["placement"]) for p in entry["placement_after"]] == [
        ("hswish/decomposed/Add", "npu"), ("hswish/decomposed/Clip", "npu"),
        ("hswish/decomposed/Mul", "npu"), ("hswish/decomposed/Div", "npu")]
    assert [(v["where"], v["kind"], v["passed"]) for v in entry["verification"]] == [
        ("y", "output", True), ("h", "region", True)]
    assert max(v["max_abs_err"] for v in entry["verification"]) <= 1e-5
    assert [(r["node"], r["placement"], r["strategy"]) for r in result.review] == [
        ("hswish", "cpu → npu 4", "rewrite: decompose-hardswish")]
    assert result.review[0]["verification"]["where"] == "h"
    assert {"cpu_reference_original_s", "cpu_reference_s"} <= set(result.timings)
    report = markdown.render(result)
    assert "### Rewrites applied" in report and "**`decompose-hardswish`** (exact)" in report
    assert "region <code>hswish</code> → <code>h</code>" in report
    # The first lines say the verdict is about the rewritten graph, not the model as given.
    assert report.split("\n\n")[2] == ("Gated after the contract's rewrites (`decompose-hardswish`): "
                                        "see Rewrites applied.")


def test_suggestion_lists_a_verified_rewrite_with_its_figures(tmp_path: Path) -> None:
    result = check(contract(tmp_path, zoo.hardswish(), ELEMENTWISE))
    [s] = result.suggestions
    assert (s["rewrite"], s["node"], s["fixes"]) == ("decompose-hardswish", "hswish", ["hswish"])
    assert figures(s["before"]) == (1, 2, 1) and figures(s["after"]) == (0, 1, 0)
    assert all(v["passed"] for v in s["verification"])
    assert s["timing"] in result.timings
    [row] = result.review
    assert (row["node"], row["strategy"]) == ("hswish", "rewrite: decompose-hardswish (suggested, not applied)")
    assert row["verification"]["passed"] is True
    assert "add `\"rewrites\": [\"decompose-hardswish\"]` to the contract" in markdown.render(result)


def _with_external_weights(path: Path) -> Path:
    """Move the contract's model weights into model.onnx.data, as the dynamo exporter writes them."""
    import onnx

    folder = path.parent
    model = onnx.load(str(folder / "model.onnx"))
    onnx.save_model(model, str(folder / "model.onnx"), save_as_external_data=True, all_tensors_to_one_file=True,
                    location="model.onnx.data", size_threshold=0)
    assert (folder / "model.onnx.data").stat().st_size > 0
    return path


def test_suggestions_and_rewrites_read_external_weights(tmp_path: Path) -> None:
    # Analysis leaves the weights on disk; suggestions and the proof of applied rewrites run the
    # model with onnxruntime and failed on every dynamo export ("External data path validation failed").
    result = check(_with_external_weights(contract(tmp_path / "a", zoo.hardswish(), ELEMENTWISE)))
    assert result.stages["suggestions"]["status"] == "ok"
    [s] = result.suggestions
    assert (s["rewrite"], s["node"]) == ("decompose-hardswish", "hswish")
    path = contract(tmp_path / "b", zoo.hardswish(), ELEMENTWISE, rewrites=["decompose-hardswish"])
    result = check(_with_external_weights(path))
    assert result.stages["rewrites"]["status"] == "ok"
    [entry] = result.rewrites
    assert [(v["where"], v["passed"]) for v in entry["verification"]] == [("y", True), ("h", True)]


def test_no_suggestion_when_the_rewrite_keeps_the_fallback(tmp_path: Path) -> None:
    # demo has no Clip and no HardSwish: fusing the lesson's Clip gives a HardSwish on CPU.
    result = check(contract(tmp_path, zoo.hardswish_by_hand()))
    assert result.suggestions == []
    assert result.stages["suggestions"]["rejected"] == [
        {"rewrite": "fuse-hardswish", "node": "/act/Clip", "regions": 1,
         "reason": "still on CPU: /act/Clip/fused/HardSwish"}]
    assert [(r["node"], r["strategy"]) for r in result.review] == [("/act/Clip", "change the model")]


@pytest.mark.parametrize(("atol", "listed"), [(1e-4, False), (1e-3, True)])
def test_suggestions_only_list_rewrites_that_pass_numerics(tmp_path: Path, atol: float, listed: bool) -> None:
    result = check(contract(tmp_path, zoo.gelu_erf(), {"Mul": {}, "Add": {}, "Tanh": {}, "Div": {}},
                            numerics={"atol": atol, "rtol": 0}))
    assert [s["rewrite"] for s in result.suggestions] == (["gelu-tanh"] if listed else [])
    if not listed:
        [rejected] = result.stages["suggestions"]["rejected"]
        assert rejected["rewrite"] == "gelu-tanh"
        assert rejected["reason"].startswith("numerics: output y max abs error 0.000")
        assert all(r["strategy"] == "change the model" for r in result.review)


def _wrong_hardsigmoid(view: GraphView, m: Match) -> Emitted:
    """The classic bug: ONNX's default alpha 0.2 instead of the node's 1/6."""
    b = Builder(view, m.anchor, "decomposed")
    scaled = b.op("Mul", [m.params["x"], b.const("alpha", 0.2)])
    b.clip(b.op("Add", [scaled, b.const("beta", 0.5)]), 0.0, 1.0, m.output)
    return b.done()


def test_wrong_hardsigmoid_is_caught_at_the_region_while_end_to_end_passes(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    right = REWRITES["decompose-hardsigmoid"]
    wrong = Rewrite(right.name, right.matches, right.emits, True, right.doc, right.find, _wrong_hardsigmoid)
    monkeypatch.setitem(REWRITES, "decompose-hardsigmoid", wrong)
    path = contract(tmp_path, zoo.hardsigmoid_swish(), ELEMENTWISE, rewrites=["decompose-hardsigmoid"],
                    numerics={"atol": 1e-3, "rtol": 0})
    result = check(path)
    checks = {v["kind"]: v for v in result.rewrites[0]["verification"]}
    # ~4e-4 on the logits (the small Conv and the mean shrink it), ~0.08 on the activation.
    assert checks["output"]["passed"] is True and checks["output"]["max_abs_err"] < 1e-3
    assert checks["region"]["passed"] is False and checks["region"]["max_abs_err"] > 0.05
    assert checks["region"]["where"] == "g" and checks["region"]["node"] == "/act/HardSigmoid"
    [finding] = [f for f in result.findings if f.rule == "rewrite-mismatch"]
    assert finding.node == "/act/HardSigmoid"
    assert finding.message.startswith("decompose-hardsigmoid at region /act/HardSigmoid (tensor g): max abs error 0.")
    assert result.verdict == "fail"
    # The right rewrite passes both.
    monkeypatch.setitem(REWRITES, "decompose-hardsigmoid", right)
    good = check(path)
    assert all(v["passed"] for v in good.rewrites[0]["verification"])
    assert not [f for f in good.findings if f.rule == "rewrite-mismatch"]


def test_approximate_rewrite_is_reported_with_its_error(tmp_path: Path) -> None:
    tight = check(contract(tmp_path, zoo.gelu_op(), {"Mul": {}, "Add": {}, "Tanh": {}}, rewrites=["gelu-tanh"]))
    [entry] = tight.rewrites
    assert entry["exact"] is False and (entry["atol"], entry["rtol"]) == (1e-4, 1e-3)
    assert [v["passed"] for v in entry["verification"]] == [False, False]
    assert 3e-4 < entry["verification"][0]["max_abs_err"] < 1e-3
    assert [f.rule for f in tight.findings if f.severity == "error"] == ["rewrite-mismatch", "rewrite-mismatch"]
    assert "(approximate: its error is measured below)" in markdown.render(tight)
    loose = check(contract(tmp_path, zoo.gelu_op(), {"Mul": {}, "Add": {}, "Tanh": {}},
                           rewrites=[{"name": "gelu-tanh", "atol": 1e-3}]))
    assert loose.verdict == "pass"
    assert [v["passed"] for v in loose.rewrites[0]["verification"]] == [True, True]
    assert loose.rewrites[0]["verification"][0]["max_abs_err"] == tight.rewrites[0]["verification"][0]["max_abs_err"]


def test_terminal_tells_a_rewrites_own_error_from_the_shared_outputs(tmp_path: Path) -> None:
    """HardSwish then GELU: the exact rewrite's line must not show gelu-tanh's error as its own."""
    h = onnx.helper
    gelu = zoo.gelu_erf()
    nodes = [h.make_node("HardSwish", ["x"], ["hs"], name="hswish")]
    for node in gelu.graph.node:
        node.input[:] = ["hs" if i == "x" else i for i in node.input]
        nodes.append(node)
    model = zoo.model(nodes, list(gelu.graph.initializer), opset=17)
    ops: dict[str, dict[str, Any]] = {"Add": {}, "Mul": {}, "Div": {}, "Clip": {}, "Tanh": {}}
    rewrites = ["decompose-hardswish", {"name": "gelu-tanh", "atol": 1e-3}]
    result = check(contract(tmp_path, model, ops, rewrites=rewrites))
    region = {e["name"]: next(v["max_abs_err"] for v in e["verification"] if v["kind"] == "region")
              for e in result.rewrites}
    [output] = {v["max_abs_err"] for e in result.rewrites for v in e["verification"] if v["kind"] == "output"}
    assert region["decompose-hardswish"] < 1e-6 < 1e-4 < region["gelu-tanh"] <= output
    lines = text.render(result).splitlines()
    assert [line for line in lines if line.startswith("  rewrite ")] == [
        f"  rewrite decompose-hardswish applied to 1 node(s): verified, max abs err "
        f"{region['decompose-hardswish']:.3g} at its region, {output:.3g} at the outputs",
        f"  rewrite gelu-tanh applied to 5 node(s): verified, max abs err {region['gelu-tanh']:.3g} at its region, "
        f"{output:.3g} at the outputs",
    ]


def test_a_verification_onnxruntime_cannot_run_is_not_called_verified(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """What was applied is still reported, and nothing claims a proof that did not run."""
    import npu_gate.stages.rewrites as stage

    def fail(*args: object, **kwargs: object) -> NoReturn:
        raise RuntimeError("no kernel for HardSigmoid")

    monkeypatch.setattr(stage, "verify", fail)
    result = check(contract(tmp_path, zoo.hardswish(), ELEMENTWISE, rewrites=["decompose-hardswish"]))
    message = "rewrite verification: onnxruntime: RuntimeError: no kernel for HardSigmoid"
    assert [f.message for f in result.findings if f.rule == "numerics-failed"] == [message]
    assert result.rewrite_check is not None and result.rewrite_check["verified"] is False
    assert [(e["name"], e["nodes"], e["verification"]) for e in result.rewrites] == [
        ("decompose-hardswish", ["hswish"], [])]
    [row] = result.review
    assert (row["strategy"], row["verification"]) == ("rewrite: decompose-hardswish", None)
    assert "  rewrite decompose-hardswish applied to 1 node(s): not verified\n" in text.render(result)
    assert f"**Not verified**: {message}." in markdown.render(result)
    assert result.stages["suggestions"] == {"status": "skipped", "reason": "the rewrite verification failed"}
    assert "Not tried: the rewrite verification failed." in markdown.render(result)
    assert "replacement" not in result.stages and "metric" not in result.stages  # the contract names neither


def test_what_a_failed_rewrite_verification_stops_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The replacement, the task metric and the suggestions run on the same samples: when the
    rewrite verification fails first, each stage says it was skipped and why."""
    import npu_gate.stages.rewrites as stage

    def fail(*args: object, **kwargs: object) -> NoReturn:
        raise RuntimeError("no kernel")

    monkeypatch.setattr(stage, "verify", fail)
    (tmp_path / "metrics.py").write_text(METRIC)
    (tmp_path / "mine.onnx").write_bytes(zoo.hardswish().SerializeToString())
    result = check(contract(tmp_path, zoo.hardswish(), ELEMENTWISE, rewrites=["decompose-hardswish"],
                            replacement={"onnx": "mine.onnx"},
                            metric={"callable": "metrics:agreement", "threshold": {}}))
    skipped = {"status": "skipped", "reason": "the rewrite verification failed"}
    assert [result.stages.get(s) for s in ("replacement", "metric", "suggestions")] == [skipped] * 3


def test_unmatched_rewrite_is_a_warning(tmp_path: Path) -> None:
    result = check(contract(tmp_path, zoo.reflect_pad(), rewrites=["decompose-layernorm"]))
    assert [(f.rule, f.severity, f.message) for f in result.findings if f.rule.startswith("rewrite")] == [
        ("rewrite-unmatched", "warning", "rewrite decompose-layernorm matched no node")]
    assert result.rewrites == [] and result.rewrite_check is None


def test_samples_file_rows_are_verified_too(tmp_path: Path) -> None:
    rows = np.random.default_rng(5).uniform(-3, 3, (3, *zoo.SHAPE))
    np.savez(tmp_path / "real.npz", x=rows)  # float64 on disk: cast to the contract's dtype
    path = contract(tmp_path, zoo.hardswish(), ELEMENTWISE, rewrites=["decompose-hardswish"],
                    numerics={"samples": 2, "samples_file": "real.npz"})
    result = check(path)
    assert result.rewrite_check is not None
    assert result.rewrite_check["samples"] == {"seeded": 2, "seed": 0, "file": "real.npz", "file_samples": 3}
    assert [v["samples"] for v in result.rewrites[0]["verification"]] == [5, 5]
    assert "on 2 seeded samples (seed 0) and 3 rows of <code>real.npz</code>;" in markdown.render(result)
    only_file = check(contract(tmp_path, zoo.hardswish(), ELEMENTWISE, rewrites=["decompose-hardswish"],
                               numerics={"samples": 0, "samples_file": "real.npz"}))
    assert "graph optimizations off) on 3 rows of <code>real.npz</code>;" in markdown.render(only_file)


def _bad_samples_run(tmp_path: Path, run_cli: RunCli, inputs: list[dict[str, Any]],
                     arrays: dict[str, np.ndarray]) -> list[str]:
    """check on a contract whose model file is not ONNX: an error about the samples file
    means it was read before any model was loaded, let alone run."""
    (tmp_path / "model.onnx").write_bytes(b"not onnx")
    np.savez(tmp_path / "real.npz", **arrays)  # type: ignore[arg-type]  # the stubs fear a key named allow_pickle
    doc = {"model": {"onnx": "model.onnx"}, "target": {"profile": "demo"}, "inputs": inputs,
           "rewrites": ["decompose-hardswish"], "numerics": {"samples_file": "real.npz"}}
    (tmp_path / "npu-gate.json").write_text(json.dumps(doc))
    run = run_cli("check", tmp_path / "npu-gate.json", "--no-cache")
    assert run.code == 2
    return run.err.strip().splitlines()


X: dict[str, Any] = {"name": "x", "shape": [1, 4, 6, 6], "dtype": "float32"}


@pytest.mark.parametrize(("array", "problems"), [
    (np.zeros((3, 1, 4, 3, 3)), ["array x: per-sample shape [1, 4, 3, 3], contract inputs[0].shape [1, 4, 6, 6] "
                                 "(sample k in row k)"]),
    (np.zeros((1, 4, 6, 6)), ["array x: shape [1, 4, 6, 6] has no sample axis: expected [N, 1, 4, 6, 6] "
                              "(sample k in row k)"]),
    (np.zeros((3, 6, 6), np.float32), ["array x: shape [3, 6, 6], expected [N, 1, 4, 6, 6] "
                                       "(contract inputs[0].shape [1, 4, 6, 6], sample k in row k)"]),
    (np.full((2, 3), "abc"), ["array x: dtype <U3 cannot be cast to the contract's float32 (inputs[0].dtype)",
                              "array x: shape [2, 3], expected [N, 1, 4, 6, 6] "
                              "(contract inputs[0].shape [1, 4, 6, 6], sample k in row k)"]),
    (np.where(np.arange(288).reshape(2, 1, 4, 6, 6) % 3 == 0, np.nan, 0.0),
     ["array x: 96 of 288 values are not finite as float32 (96 NaN, 0 infinite); samples must be finite"]),
    (np.array([np.inf, -np.inf, 1e300, 0.5] * 36).reshape(1, 1, 4, 6, 6),
     ["array x: 108 of 144 values are not finite as float32 (0 NaN, 108 infinite); samples must be finite"]),
])
def test_samples_file_that_does_not_fit_the_inputs_stops_before_the_model(tmp_path: Path, run_cli: RunCli,
                                                                          array: np.ndarray,
                                                                          problems: list[str]) -> None:
    lines = _bad_samples_run(tmp_path, run_cli, [X], {"x": array})
    assert lines == [f"npu-gate: error: {tmp_path / 'real.npz'}: numerics.samples_file: {p}" for p in problems]


def test_samples_file_problems_of_every_input_are_listed(tmp_path: Path, run_cli: RunCli) -> None:
    ints = {"name": "ids", "shape": [5], "dtype": "int64"}
    mask = {"name": "mask", "shape": [5], "dtype": "bool"}
    lines = _bad_samples_run(tmp_path, run_cli, [X, ints, mask], {"ids": np.zeros((2, 5), np.float32)})
    where = f"npu-gate: error: {tmp_path / 'real.npz'}: numerics.samples_file"
    assert lines == [f"{where}: no array for input(s) x, mask",
                     f"{where}: array ids: dtype float32 cannot be cast to the contract's int64 (inputs[1].dtype)"]
    lines = _bad_samples_run(tmp_path, run_cli, [X, ints], {"x": np.zeros((3, *X["shape"])),
                                                            "ids": np.zeros((2, 5), np.int32)})
    assert lines == [f"{where}: arrays must share a non-empty first axis (samples); found x 3, ids 2"]


DEVICE_JSON = {"source": "board run 2026-12-01", "timings": [
    {"scope": "node", "key": "hswish", "ms": 0.25}, {"scope": "model", "key": "net", "ms": 2.5}]}


def test_device_timings_are_imported_and_shown(tmp_path: Path, run_cli: RunCli) -> None:
    (tmp_path / "board.json").write_text(json.dumps(DEVICE_JSON))
    result = check(contract(tmp_path, zoo.hardswish(), ELEMENTWISE, device_timings="board.json"))
    [row] = result.review
    assert row["latency"]["device"] == {"scope": "node", "key": "hswish", "ms": 0.25, "source": "board run 2026-12-01"}
    assert result.device_timings == {"path": "board.json", "source": "board run 2026-12-01", "entries": 2,
                                     "unmatched": []}
    report = markdown.render(result)
    assert "device: 0.25 ms (node <code>hswish</code>)" in report
    assert "board run 2026-12-01" in report
    # CSV through the CLI flag, keyed by the model only: the node row falls back to it.
    (tmp_path / "board.csv").write_text("scope,key,ms\nmodel,net,3.5\npartition,7,1.0\n")
    path = contract(tmp_path, zoo.hardswish(), ELEMENTWISE)
    run = run_cli("check", path, "--device-timings", tmp_path / "board.csv", "--json", tmp_path / "r.json", "-q")
    assert (run.code, run.err) == (1, "npu-gate: warning: board.csv: partition '7' matches no partition of the "
                                      "checked graph; its figure is not used\n")
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["review"][0]["latency"]["device"] == {"scope": "model", "key": "net", "ms": 3.5, "source": None}


def test_device_timings_by_partition(tmp_path: Path) -> None:
    (tmp_path / "board.json").write_text(json.dumps({"timings": [{"scope": "partition", "key": "1", "ms": 0.7}]}))
    result = check(contract(tmp_path, zoo.hardswish(), ELEMENTWISE, device_timings="board.json"))
    assert [(p.id, p.device, p.nodes) for p in result.partitions] == [
        (0, "npu", ["conv0"]), (1, "cpu", ["hswish"]), (2, "npu", ["conv1"])]
    assert result.review[0]["latency"]["device"] == {"scope": "partition", "key": "1", "ms": 0.7, "source": None}
    assert "device: 0.7 ms (partition <code>1</code>)" in markdown.render(result)


def test_device_timings_that_match_nothing_are_warned_about(tmp_path: Path, run_cli: RunCli) -> None:
    (tmp_path / "board.csv").write_text("scope,key,ms\nnode,/Nope,1\nnode,hswish,0.25\nnode,conv1,0.1\n"
                                        "partition,7,1\npartition,2,0.5\nmodel,nett,3\nmodel,net,2\n")
    path = contract(tmp_path, zoo.hardswish(), ELEMENTWISE, device_timings="board.csv")
    warnings = [
        "npu-gate: warning: board.csv: node '/Nope' matches no node of the checked graph; its figure is not used",
        "npu-gate: warning: board.csv: partition '7' matches no partition of the checked graph; its figure is not "
        "used",
        "npu-gate: warning: board.csv: model 'nett' is not the contract's name 'net'; its figure is not used"]
    fresh = run_cli("check", path, "--json", tmp_path / "r.json", "-q")
    hit = run_cli("check", path, "-q")  # answered from the cache: the same warnings
    assert (fresh.code, fresh.err.splitlines()) == (1, warnings)
    assert (hit.code, hit.err.splitlines()) == (1, warnings)
    doc = json.loads((tmp_path / "r.json").read_text())
    validate_result(doc)
    assert doc["device_timings"]["unmatched"] == [
        {"scope": "node", "key": "/Nope"}, {"scope": "partition", "key": "7"}, {"scope": "model", "key": "nett"}]
    # A node a rewrite replaced is matched by its review row, though the checked graph no longer holds it.
    rewritten = check(contract(tmp_path, zoo.hardswish(), ELEMENTWISE, device_timings="board.csv",
                               rewrites=["decompose-hardswish"]))
    assert [r["node"] for r in rewritten.review] == ["hswish"]
    assert rewritten.device_timings is not None
    assert rewritten.device_timings["unmatched"] == [
        {"scope": "node", "key": "/Nope"}, {"scope": "partition", "key": "7"}, {"scope": "partition", "key": "2"},
        {"scope": "model", "key": "nett"}]  # one partition (0) now; file order


def test_emitted_name_clash_is_a_model_error(tmp_path: Path, run_cli: RunCli) -> None:
    model = zoo.hardswish()
    model.graph.node[0].name = "hswish/decomposed/Add"
    run = run_cli("check", contract(tmp_path, model, rewrites=["decompose-hardswish"]))
    assert run.code == 2
    assert run.err.strip().endswith(
        "rewrites: rewrite decompose-hardswish: emitted name 'hswish/decomposed/Add' already exists in the model")


def test_without_device_timings_latency_is_not_measured(tmp_path: Path) -> None:
    result = check(contract(tmp_path, zoo.hardswish(), ELEMENTWISE))
    assert result.review[0]["latency"]["device"] is None
    assert "device: not measured" in markdown.render(result)


def test_bad_device_timings_stop_the_run(tmp_path: Path, run_cli: RunCli) -> None:
    (tmp_path / "board.csv").write_text("scope,key,ms\nchip,net,3.5\nnode,a,-1\n")
    run = run_cli("check", contract(tmp_path, zoo.hardswish(), ELEMENTWISE, device_timings="board.csv"))
    assert run.code == 2
    assert run.err.splitlines() == [
        f"npu-gate: error: {tmp_path / 'board.csv'}: row 2: scope 'chip' is not one of model, partition, node",
        f"npu-gate: error: {tmp_path / 'board.csv'}: row 3: ms '-1' is not a finite number of milliseconds >= 0"]


def test_device_timings_must_be_finite_numbers(tmp_path: Path, run_cli: RunCli) -> None:
    """inf, NaN or true is no measurement: the review table would show `inf ms` as one. (JSON's
    Infinity and NaN are refused by the reader itself: tests/contract/test_device_timings_strict.py.)"""
    (tmp_path / "board.json").write_text('{"timings": [{"scope": "node", "key": "hswish", "ms": "inf"}, '
                                         '{"scope": "model", "key": "net", "ms": true}]}')
    (tmp_path / "board.csv").write_text("scope,key,ms\nnode,hswish,nan\n")
    cases = (("board.json", ["timings[0]: ms 'inf'", "timings[1]: ms True"]), ("board.csv", ["row 2: ms 'nan'"]))
    for name, problems in cases:
        run = run_cli("check", contract(tmp_path, zoo.hardswish(), ELEMENTWISE, device_timings=name))
        assert run.code == 2
        assert run.err.splitlines() == [
            f"npu-gate: error: {tmp_path / name}: {p} is not a finite number of milliseconds >= 0" for p in problems]


METRIC = '''
import numpy as np

def agreement(reference, candidate, samples):
    same = [float(np.mean(np.sign(r["y"]) == np.sign(c["y"]))) for r, c in zip(reference, candidate)]
    worst = max(float(np.max(np.abs(r["y"] - c["y"]))) for r, c in zip(reference, candidate))
    return {"sign_agreement": min(same), "max_diff": worst, "samples": len(samples)}
'''


@pytest.mark.parametrize(("threshold", "passed"), [({"max_diff": {"max": 1e-3}}, True),
                                                   ({"max_diff": {"max": 1e-5}}, False)])
def test_task_metric_is_reported(tmp_path: Path, threshold: dict[str, dict[str, float]], passed: bool) -> None:
    (tmp_path / "task_metric.py").write_text(METRIC)
    path = contract(tmp_path, zoo.gelu_op(), {"Mul": {}, "Add": {}, "Tanh": {}},
                    rewrites=[{"name": "gelu-tanh", "atol": 1e-3}],
                    metric={"callable": "task_metric:agreement", "threshold": threshold})
    result = check(path)
    assert result.metric is not None
    assert result.metric["values"]["samples"] == 4.0
    assert result.metric["values"]["sign_agreement"] == 1.0
    assert 3e-4 < result.metric["values"]["max_diff"] < 1e-3
    assert result.metric["passed"] is passed
    assert [f.rule for f in result.findings if f.rule == "task-metric"] == ([] if passed else ["task-metric"])
    assert "### Task metric" in markdown.render(result)


def test_contract_rejects_unknown_rewrites(tmp_path: Path, run_cli: RunCli) -> None:
    run = run_cli("check", contract(tmp_path, zoo.hardswish(), rewrites=["decompose-swish", "gelu-tanh",
                                                                          "gelu-tanh"]))
    assert run.code == 2
    assert "rewrites[0]: unknown rewrite 'decompose-swish' (known: decompose-hardswish, " in run.err
    assert "rewrites[2]: 'gelu-tanh' is named twice" in run.err


def test_rewrite_preserves_untouched_nodes_and_order(tmp_path: Path) -> None:
    path = contract(tmp_path, zoo.hardswish(), ELEMENTWISE, rewrites=["decompose-hardswish"])
    names = [n.name for n in check(path).nodes]
    assert names == ["conv0", "hswish/decomposed/Add", "hswish/decomposed/Clip", "hswish/decomposed/Mul",
                     "hswish/decomposed/Div", "conv1"]


def test_builder_clip_uses_inputs_from_opset_11() -> None:
    b = Builder(GraphView(zoo.hardswish()), "n", "t")
    b.clip("x", 0.0, 1.0, "y")
    assert [list(n.input) for n in b.nodes] == [["x", "n/t/min", "n/t/max"]]
    old = zoo.hardswish()
    old.opset_import[0].version = 10
    b = Builder(GraphView(old), "n", "t")
    b.clip("x", 0.0, 1.0, "y")
    assert [list(n.input) for n in b.nodes] == [["x"]] and b.initializers == []


@pytest.mark.torch
@pytest.mark.slow
def test_torch_contract_checks_the_rewritten_graph_against_pytorch(tmp_path: Path) -> None:
    import shutil

    from tests.helpers.common import REPO

    for name in ("seed_net.py", "npu-gate.json"):
        shutil.copy(REPO / "examples" / "seed-hardswish" / name, tmp_path / name)
    doc = json.loads((tmp_path / "npu-gate.json").read_text())
    (tmp_path / "p.json").write_text(json.dumps({"name": "hs", "description": "t", "source": "tests",
                                                 "evidence": "illustrative", "ops": {"Conv": {}, "HardSwish": {}}}))
    doc.update(target={"profile": "p.json"}, rewrites=["fuse-hardswish"])
    (tmp_path / "npu-gate.json").write_text(json.dumps(doc))
    result = check(tmp_path / "npu-gate.json")
    assert result.verdict == "pass"
    assert result.ops == {"Conv": 1, "HardSwish": 1}
    assert result.rewrite_check is not None
    assert figures(result.rewrite_check["before"]) == (4, 1, 1)
    assert figures(result.summary) == (0, 1, 0)
    # onnxruntime on the rewritten graph vs eager PyTorch (the contract's own numerics).
    assert [c["passed"] for c in result.numerics] == [True]
    assert result.rewrites[0]["nodes"] == ["/Add", "/Clip", "/Mul", "/Div"]


def test_replacement_onnx_model_is_compared_with_the_original(tmp_path: Path) -> None:
    (tmp_path / "mine.onnx").write_bytes(zoo.hardswish_by_hand().SerializeToString())
    model = zoo.hardswish_by_hand()
    model.graph.node[0].input[1] = "conv1_w"  # same shapes, different weights: a wrong replacement
    model.graph.node[0].input[2] = "conv1_b"
    model.graph.node[-1].output[0] = model.graph.output[0].name = "out"  # paired by position
    (tmp_path / "wrong.onnx").write_bytes(model.SerializeToString())
    good = check(contract(tmp_path, zoo.hardswish(), ELEMENTWISE, replacement={"onnx": "mine.onnx"}))
    r = good.replacement
    assert r is not None
    assert r["model"]["path"] == "mine.onnx"
    assert figures(r["before"]) == (1, 2, 1) and figures(r["after"]) == (0, 1, 0)
    assert [(v["where"], v["passed"]) for v in r["verification"]] == [("y", True)]
    assert "cpu_reference_replacement_s" in good.timings
    assert "### Replacement model" in markdown.render(good)
    err = r["verification"][0]["max_abs_err"]
    assert f"  replacement mine.onnx: verified, max abs err {err:.3g}; cpu nodes 1 → 0, npu partitions 2 → 1 " \
           "(model → replacement)\n" in text.render(good)
    bad = check(contract(tmp_path, zoo.hardswish(), ELEMENTWISE, replacement={"onnx": "wrong.onnx"}))
    assert bad.replacement is not None
    [v] = bad.replacement["verification"]
    assert v["passed"] is False and v["max_abs_err"] > 0.01
    assert [f.message for f in bad.findings if f.rule == "rewrite-mismatch"] == [
        f"replacement at output y: max abs error {v['max_abs_err']:.3g}, max rel error {v['max_rel_err']:.3g} "
        "(atol 0.0001, rtol 0.001); compared with replacement output out"]
    assert f"  replacement wrong.onnx: MISMATCH, max abs err {v['max_abs_err']:.3g}; " in text.render(bad)


def test_rewrites_and_replacements_without_samples_are_a_warning(tmp_path: Path) -> None:
    """numerics.samples 0 and no samples_file: nothing compared the rewritten graph with the
    original, and the result says so as a finding, not only in a stage's reason."""
    (tmp_path / "mine.onnx").write_bytes(zoo.hardswish_by_hand().SerializeToString())
    result = check(contract(tmp_path, zoo.hardswish(), ELEMENTWISE, rewrites=["decompose-hardswish"],
                            replacement={"onnx": "mine.onnx"}, numerics={"samples": 0}))
    assert [(f.rule, f.severity, f.message) for f in result.findings if f.rule == "rewrite-unverified"] == [
        ("rewrite-unverified", "warning",
         "rewrites decompose-hardswish applied but not verified: numerics.samples is 0 and no samples_file"),
        ("rewrite-unverified", "warning",
         "replacement not compared with the model: numerics.samples is 0 and no samples_file"),
    ]
    assert result.verdict == "pass"  # a warning: the gate's own figures still decide
    report = markdown.render(result)
    assert "the gate checked the rewritten graph.\n\n**Not verified**: no samples" in report


def test_a_shape_mismatch_names_the_original_model_not_pytorch(tmp_path: Path) -> None:
    """A replacement (or rewrite) is compared with the original ONNX model: no PyTorch here."""
    flat = zoo.hardswish()
    flat.graph.node.append(onnx.helper.make_node("Flatten", ["y"], ["flat"], name="flatten"))
    del flat.graph.output[:]
    flat.graph.output.append(onnx.helper.make_tensor_value_info("flat", onnx.TensorProto.FLOAT, [1, 144]))
    (tmp_path / "flat.onnx").write_bytes(flat.SerializeToString())
    result = check(contract(tmp_path, zoo.hardswish(), ELEMENTWISE, replacement={"onnx": "flat.onnx"}))
    assert [f.message for f in result.findings if f.rule == "rewrite-mismatch"] == [
        "replacement at output y: compared with replacement output flat; shape [1, 144] vs the original [1, 4, 6, 6]"]


def test_replacement_file_must_exist(tmp_path: Path, run_cli: RunCli) -> None:
    run = run_cli("check", contract(tmp_path, zoo.hardswish(), replacement={"onnx": "nope.onnx"}))
    assert run.code == 2 and "replacement.onnx: file 'nope.onnx' not found" in run.err


def test_replacement_whose_inputs_differ_from_the_contract_stops_before_the_model(tmp_path: Path,
                                                                                  run_cli: RunCli) -> None:
    other = zoo.hardswish_by_hand()
    other.graph.input[0].name = "images"
    other.graph.node[0].input[0] = "images"
    (tmp_path / "other.onnx").write_bytes(other.SerializeToString())
    path = contract(tmp_path, zoo.hardswish(), ELEMENTWISE, replacement={"onnx": "other.onnx"})
    (tmp_path / "model.onnx").write_bytes(b"not onnx")  # never read: the replacement stops the run first
    run = run_cli("check", path, "--no-cache")
    assert run.code == 2
    assert run.err.splitlines() == [
        f"npu-gate: error: {path}: replacement.onnx: other.onnx has input(s) images, the contract has x"]


@pytest.mark.parametrize(("callable_", "problem"), [
    ("nomod:agreement", "cannot import 'nomod': No module named 'nomod' (searched the contract folder, the "
                        "repository root and model.torch.path: ., then the installed packages; add the folder that "
                        "holds it to model.torch.path, relative to the contract)"),
    ("task_metric:nope", "'task_metric' has no callable 'nope'"),
    ("task_metric:METRIC_NAME", "'task_metric' has no callable 'METRIC_NAME'"),
])
def test_metric_that_cannot_be_imported_stops_before_the_model(tmp_path: Path, run_cli: RunCli, callable_: str,
                                                               problem: str) -> None:
    (tmp_path / "task_metric.py").write_text(METRIC + "METRIC_NAME = 'not callable'\n")
    path = contract(tmp_path, zoo.hardswish(), ELEMENTWISE, rewrites=["decompose-hardswish"],
                    metric={"callable": callable_})
    (tmp_path / "model.onnx").write_bytes(b"not onnx")
    run = run_cli("check", path, "--no-cache")
    assert run.code == 2
    assert run.err.splitlines() == [f"npu-gate: error: {path}: metric.callable: {problem}"]


HS_NET = '''
import torch
from torch import nn


class HsNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.act = nn.Hardswish()

    def forward(self, x):
        return self.act(self.conv(x))


def build_model():
    return HsNet()
'''


@pytest.mark.torch
@pytest.mark.slow
def test_replacement_torch_factory_is_exported_and_compared(tmp_path: Path) -> None:
    import shutil

    from tests.helpers.common import REPO

    for name in ("seed_net.py", "npu-gate.json"):
        shutil.copy(REPO / "examples" / "seed-hardswish" / name, tmp_path / name)
    (tmp_path / "hs_net.py").write_text(HS_NET)
    (tmp_path / "p.json").write_text(json.dumps({"name": "hs", "description": "t", "source": "tests",
                                                 "evidence": "illustrative", "ops": {"Conv": {}, "HardSwish": {}}}))
    doc = json.loads((tmp_path / "npu-gate.json").read_text())
    doc.update(target={"profile": "p.json"},
               replacement={"torch": {"factory": "hs_net:build_model", "exporter": "torchscript", "opset": 17}})
    (tmp_path / "npu-gate.json").write_text(json.dumps(doc))
    result = check(tmp_path / "npu-gate.json")
    r = result.replacement
    assert r is not None
    assert r["model"]["factory"] == "hs_net:build_model"
    assert figures(r["before"]) == (4, 1, 1) and figures(r["after"]) == (0, 1, 0)
    # Same seed, same Conv init: nn.Hardswish equals the hand-written form.
    assert [v["passed"] for v in r["verification"]] == [True]
    assert r["verification"][0]["max_abs_err"] < 1e-5


@pytest.mark.torch
def test_replacement_factory_problems_name_replacement_torch_factory(tmp_path: Path, run_cli: RunCli) -> None:
    import shutil

    from tests.helpers.common import REPO

    for name in ("seed_net.py", "npu-gate.json"):
        shutil.copy(REPO / "examples" / "seed-hardswish" / name, tmp_path / name)
    (tmp_path / "hs_net.py").write_text(HS_NET)
    doc = json.loads((tmp_path / "npu-gate.json").read_text())
    doc["replacement"] = {"torch": {"factory": "hs_net:nope", "exporter": "torchscript", "opset": 17}}
    (tmp_path / "npu-gate.json").write_text(json.dumps(doc))
    run = run_cli("check", tmp_path / "npu-gate.json", "--no-cache")
    assert run.code == 2
    assert run.err.splitlines() == [
        f"npu-gate: error: {tmp_path / 'npu-gate.json'}: replacement.torch.factory: 'hs_net' has no callable 'nope'"]


def test_review_strategy_waiver_wins_over_a_suggestion(tmp_path: Path) -> None:
    waiver = {"rule": "unsupported-op", "op_type": "HardSwish", "reason": "ships on CPU in v1"}
    result = check(contract(tmp_path, zoo.hardswish(), ELEMENTWISE, waivers=[waiver]))
    assert [s["rewrite"] for s in result.suggestions] == ["decompose-hardswish"]
    [row] = result.review
    assert (row["strategy"], row["rewrite"], row["verification"]) == ("waiver: ships on CPU in v1", None, None)
    assert row["reason"] == "op HardSwish not in profile test-npu"
    assert row["latency"]["cpu_reference"] == ["cpu_reference_s"]


def test_review_names_the_failed_constraint(tmp_path: Path) -> None:
    ops = dict(ELEMENTWISE, HardSwish={"constraints": [
        {"id": "hswish-rank", "input": 0, "rank": {"max": 2}}]})
    result = check(contract(tmp_path, zoo.hardswish(), ops))
    [row] = result.review
    assert row["constraints"] == ["hswish-rank"]
    assert row["strategy"] == "rewrite: decompose-hardswish (suggested, not applied)"
    assert "| <code>hswish-rank</code>: " in markdown.render(result)


def test_a_rewrite_of_what_an_earlier_rewrite_emitted_is_reviewed(tmp_path: Path) -> None:
    """decompose-hardswish then fuse-hardswish: the fuse replaces nodes the model as given
    never had, and the decomposed nodes are not in the checked graph (the review crashed)."""
    result = check(contract(tmp_path, zoo.hardswish(), dict(ELEMENTWISE, HardSwish={}),
                            rewrites=["decompose-hardswish", "fuse-hardswish"]))
    assert [(r["node"], r["placement"], r["reason"]) for r in result.review] == [
        ("hswish", "npu → replaced by a later rewrite 4", "none (predicted on the NPU)"),
        *[(f"hswish/decomposed/{op}", "emitted by an earlier rewrite → npu 1", "none (emitted by an earlier rewrite)")
          for op in ("Add", "Clip", "Mul", "Div")],
    ]
    assert all(v["passed"] for e in result.rewrites for v in e["verification"])
    assert "<code>hswish/decomposed/Div</code> (emitted by an earlier rewrite); emitted" in markdown.render(result)


def test_review_of_a_replaced_npu_node_says_predicted_not_ran(tmp_path: Path) -> None:
    """The Div, Add and Muls of the Erf pattern were placed on the NPU by the static
    prediction: nothing ran, so the row must not say so."""
    ops: dict[str, dict[str, Any]] = {"Div": {}, "Add": {}, "Mul": {}, "Tanh": {}}
    result = check(contract(tmp_path, zoo.gelu_erf(), ops, rewrites=[{"name": "gelu-tanh", "atol": 1e-3}]))
    assert [(r["node"], r["reason"]) for r in result.review] == [
        ("/mlp/Div", "none (predicted on the NPU)"),
        ("/mlp/Erf", "op Erf not in profile test-npu"),
        ("/mlp/Add", "none (predicted on the NPU)"),
        ("/mlp/Mul", "none (predicted on the NPU)"),
        ("/mlp/Mul_1", "none (predicted on the NPU)"),
    ]


def test_review_judges_a_node_a_profile_limit_puts_on_cpu(tmp_path: Path) -> None:
    """A profile limit is a CPU fallback like a missing op: its constraint is named, its
    active error means "change the model" and its waiver is the strategy."""
    waiver = {"rule": "profile-limit", "node": "hswish", "reason": "rank 4 accepted on CPU"}
    path = contract(tmp_path, zoo.hardswish(), dict(ELEMENTWISE, HardSwish={}), waivers=[waiver])
    profile = json.loads((tmp_path / "profile.json").read_text())
    (tmp_path / "profile.json").write_text(json.dumps(profile | {"limits": {"max_rank": 3}}))
    result = check(path)
    rows = {r["node"]: r for r in result.review}
    assert [(n, r["constraints"], r["strategy"]) for n, r in rows.items()] == [
        ("conv0", ["limit-max-rank"], "change the model"),
        ("hswish", ["limit-max-rank"], "waiver: rank 4 accepted on CPU"),
        ("conv1", ["limit-max-rank"], "change the model"),
    ]


@pytest.mark.parametrize("decide", ["prediction", "measured"])
def test_a_node_measured_on_the_npu_needs_no_rewrite(tmp_path: Path, decide: str) -> None:
    """The fake compiler runs HardSwish on the NPU: when its placement decides, the predicted
    fallback is neither "leave on CPU" nor a rewrite suggestion."""
    probe = {"compiler": "fake", "target": "fake1", "decide": decide}
    result = check(contract(tmp_path, zoo.hardswish(), ELEMENTWISE,
                            target={"profile": "profile.json", "probe": probe}))
    [row] = result.review
    if decide == "prediction":
        assert [s["rewrite"] for s in result.suggestions] == ["decompose-hardswish"]
        assert (row["placement"], row["strategy"]) == ("cpu", "rewrite: decompose-hardswish (suggested, not applied)")
        assert "  suggestion: rewrite decompose-hardswish at hswish (verified; see the report)" in text.render(result)
    else:
        assert result.suggestions == [] and "suggestions" not in result.stages
        assert (row["node"], row["placement"], row["strategy"], row["rewrite"]) == (
            "hswish", "cpu predicted, measured npu", "none needed: measured on the NPU", None)
        assert "suggestion" not in text.render(result)
        assert "| cpu predicted, measured npu | op HardSwish not in profile test-npu | none needed: measured on the " \
               "NPU |" in " ".join(markdown.render(result).split())


@pytest.mark.torch
@pytest.mark.slow
def test_rewrite_example_passes(run_cli: RunCli, tmp_path: Path) -> None:
    from tests.helpers.common import REPO

    run = run_cli("check", REPO / "examples" / "rewrite-hardswish", "--json", tmp_path / "r.json", "-q")
    assert run.code == 0, run.err
    doc = json.loads((tmp_path / "r.json").read_text())
    validate_result(doc)
    assert [r["name"] for r in doc["rewrites"]] == ["decompose-hardswish"]
    assert figures(doc["rewrite_check"]["before"]) == (1, 1, 1)
    assert figures(doc["summary"]) == (0, 1, 0)
    assert [c["passed"] for c in doc["numerics"]] == [True]  # rewritten graph vs PyTorch


def test_metric_without_a_candidate_is_skipped_and_says_why(tmp_path: Path) -> None:
    (tmp_path / "task_metric.py").write_text(METRIC)
    result = check(contract(tmp_path, zoo.hardswish(), ELEMENTWISE, metric={"callable": "task_metric:agreement"}))
    assert result.metric is None
    assert result.stages["metric"] == {"status": "skipped", "reason": "nothing to compare: no rewrite was "
                                       "applied and no replacement model was given"}


def test_metric_that_raises_is_a_task_metric_error(tmp_path: Path) -> None:
    (tmp_path / "broken_metric.py").write_text(
        "def score(reference, candidate, samples):\n    raise KeyError('logits')\n")
    result = check(contract(tmp_path, zoo.hardswish(), ELEMENTWISE, rewrites=["decompose-hardswish"],
                            metric={"callable": "broken_metric:score"}))
    assert result.metric is not None
    assert result.metric["error"] == "broken_metric:score: KeyError: 'logits'"
    assert [f.message for f in result.findings if f.rule == "task-metric"] == [
        "task metric could not be computed: broken_metric:score: KeyError: 'logits'"]
    assert result.verdict == "fail"


def test_metric_that_calls_sys_exit_is_a_task_metric_error(tmp_path: Path) -> None:
    """sys.exit(0) in the metric used to end npu-gate with exit 0, a "pass" with no report."""
    (tmp_path / "exiting_metric.py").write_text(
        "import sys\n\ndef score(reference, candidate, samples):\n    sys.exit(0)\n")
    result = check(contract(tmp_path, zoo.hardswish(), ELEMENTWISE, rewrites=["decompose-hardswish"],
                            metric={"callable": "exiting_metric:score"}))
    assert [f.message for f in result.findings if f.rule == "task-metric"] == [
        "task metric could not be computed: exiting_metric:score: SystemExit: 0"]
    assert result.verdict == "fail"


@pytest.mark.parametrize(("bound", "listed"), [(1e-3, True), (1e-5, False)])
def test_suggestions_are_judged_on_the_task_metric_too(tmp_path: Path, bound: float, listed: bool) -> None:
    (tmp_path / "task_metric.py").write_text(METRIC)
    result = check(contract(tmp_path, zoo.gelu_op(), {"Mul": {}, "Add": {}, "Tanh": {}},
                            numerics={"atol": 1e-3, "rtol": 0},
                            metric={"callable": "task_metric:agreement", "threshold": {"max_diff": {"max": bound}}}))
    assert [s["rewrite"] for s in result.suggestions] == (["gelu-tanh"] if listed else [])
    if listed:
        assert result.suggestions[0]["metric"]["passed"] is True
    else:
        [rejected] = result.stages["suggestions"]["rejected"]
        assert re.fullmatch(r"task metric: max_diff 0\.000\d+ > max 1e-05", rejected["reason"])


def test_task_metric_messages_give_the_failed_bound_in_words() -> None:
    """They used to print Python's None: `max_err = 2.98e-08 (min None, max 1e-12)`."""
    from npu_gate.findings.rewrites import metric_message

    def message(checks: list[dict[str, Any]], values: dict[str, float]) -> str:
        return metric_message({"values": values, "checks": [{"passed": False, "min": None, "max": None, **c}
                                                             for c in checks], "passed": False})

    values = {"max_err": 2.9802322387695312e-08, "n": 4.0}
    assert message([{"name": "max_err", "value": values["max_err"], "max": 1e-12}], values) == \
        "task metric: max_err 2.98e-08 > max 1e-12"
    assert message([{"name": "top1", "value": None, "min": 0.9}], values) == \
        "task metric: the metric returned no value 'top1' (it returned max_err, n)"
    assert message([{"name": "top1", "value": 0.89999, "min": 0.9}, {"name": "n", "value": float("nan"), "max": 9}],
                   {"top1": 0.89999, "n": float("nan")}) == \
        "task metric: top1 0.89999 < min 0.9; n is nan, not a finite number"
    assert message([{"name": "top1", "value": None, "min": 0.9}], {}) == \
        "task metric: the metric returned no value 'top1' (it returned nothing)"

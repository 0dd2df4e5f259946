"""`npu-gate profile calibrate`: the sweeps, the derivation from a record (offline), the
checked-in rknn-rk3588 profile against its record, the profile diff, the whole path on the fake
compiler (batch child with a crash and a restart), and on the real RKNN-Toolkit2 (marked `rknn`)."""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import onnx
import pytest

from npu_gate.calibrate import SWEEPS, Family, candidates_from, derive_profile, measure, record_document, record_json
from npu_gate.calibrate.diff import diff_profiles
from npu_gate.calibrate.infer import compiler_fused, derive
from npu_gate.calibrate.sweeps import ADAPTER, ELIMINATE, LOWER, OP, PATTERN, SPLIT, X, between, single
from npu_gate.probe.fake import FakeCompiler
from npu_gate.profile.spec import load_profile
from npu_gate.resources import builtin_profile_names, load_schema, profile_dir
from npu_gate.result.probe import ACTUALS, STATUSES
from npu_gate.validation import schema_problems
from tests.helpers.common import REPO, RunCli

TINY = {f.op: f for f in SWEEPS["tiny"]()}


def _point(pid: str, family: str, status: str = "ok", device: str | None = None, **more: Any) -> dict[str, Any]:
    return {"point": pid, "family": family, "status": status, "device": device, **more}


def _record(families: list[Family], devices: Mapping[str, str | None], **more: Any) -> dict[str, Any]:
    """A record with the given device per point (None: the point crashed)."""
    points = [_point(p.id, f.id, "ok" if devices[p.id] else "crashed", devices[p.id])
              for f in families for p in f.points]
    return {"name": "cal", "record_name": "cal.calibration.json", "sweep": "tiny", "command": "npu-gate ...",
            "extends": None, "compiler": {"name": "c", "version": "1", "target": "t"}, "points": points, **more}


# --- the sweeps ---------------------------------------------------------------------------

def _onnxruntime_version() -> tuple[int, ...]:
    import onnxruntime

    return tuple(int(p) for p in onnxruntime.__version__.split(".")[:2] if p.isdigit())


# The qdq sweep's points are quantized by onnxruntime's get_qnn_qdq_config; the record was made with
# 1.32, and older releases (Python 3.10's newest) refuse its per-channel LayerNormalization point.
OLD_QNN_QUANTIZER = _onnxruntime_version() < (1, 32)
NEEDS_QNN_QUANTIZER = pytest.mark.skipif(OLD_QNN_QUANTIZER, reason="the qdq sweep's points need onnxruntime >= 1.32 "
                                         "(older get_qnn_qdq_config refuses per-channel LayerNormalization)")


# qdq: onnxruntime's QNN quantizer imports torch when it is installed (5 s)
# splits: 2 s (a margin below the slow check's 3 s)
@pytest.mark.parametrize("name", [pytest.param(n, marks=[pytest.mark.torch, pytest.mark.slow]) if n == "qdq" else
                                  pytest.param(n, marks=pytest.mark.slow) if n == "splits" else n for n in SWEEPS])
def test_sweeps_have_unique_ids_and_their_measured_nodes(name: str) -> None:
    if name == "qdq" and OLD_QNN_QUANTIZER:
        pytest.skip("the qdq sweep's points need onnxruntime >= 1.32 (older get_qnn_qdq_config refuses "
                    "per-channel LayerNormalization)")
    families = SWEEPS[name]()
    points = [p for f in families for p in f.points]
    assert len({f.id for f in families}) == len(families), name
    assert len({p.id for p in points}) == len(points), name
    for family in families:
        if family.points[0].factory:  # torch points: see test_the_ethos_u_sweep_...
            continue
        for point in family.points:
            nodes = {n.name for n in point.build().graph.node}
            if family.kind in (OP, ELIMINATE, LOWER, SPLIT):
                assert family.node_of(point) in nodes, point.id
            if family.kind == SPLIT:  # a split family's rule is optional (the Transpose alone only records)
                assert family.rule is None or family.rule["op"] == family.op, family.id
            else:
                assert (family.rule is not None) == (family.kind in (ELIMINATE, LOWER)), family.id
    standard = SWEEPS["standard"]()
    assert sum(len(f.points) for f in standard) == 372
    # 429 + folding_families: 6 + 9 + 3, + issue20_pattern_families: 6, + reshape-batch-moved: 14,
    # + Mul, Add and Slice identity points: 1 + 4 + 4, + slice-reverse: 16
    assert sum(len(f.points) for f in SWEEPS["standard-int8"]()) == 492
    assert sum(len(f.points) for f in SWEEPS["tiny"]()) == 7
    assert {f.kind for f in standard} == {OP, PATTERN, ADAPTER, ELIMINATE, LOWER}



RECORDS = sorted([*profile_dir().glob("*.calibration.json"), *(REPO / "docs" / "records").glob("*.calibration.json")])


@pytest.mark.parametrize("path", RECORDS, ids=lambda p: p.name)
def test_each_checked_in_record_measured_exactly_its_sweeps_points(path: Path) -> None:
    """The sweep named in a checked-in record still yields exactly the record's (point, family)
    pairs, no more and no fewer. The order is not compared: qnn-htp-fp16's record has the two
    slice-axis0 points after the rank adapters; the standard sweep builds them after the other Slices."""
    record = json.loads(path.read_text(encoding="utf-8"))
    sweep = [(p.id, f.id) for f in SWEEPS[record["sweep"]]() for p in f.points]
    assert sorted((p["point"], p["family"]) for p in record["points"]) == sorted(sweep)


@pytest.mark.parametrize("sweep", ["standard", "ethos-u"])
def test_every_hypothesis_is_valid_profile_vocabulary(tmp_path: Path, sweep: str) -> None:
    ops: dict[str, Any] = {}
    for family in (f for f in SWEEPS[sweep]() if f.kind == OP):
        written = ops.setdefault(family.op, {"constraints": []})["constraints"]
        written += [c for c in family.constraints if c not in written]  # Resize's two families share one
    path = tmp_path / "all.json"
    path.write_text(json.dumps({"name": "all", "description": "d", "source": "s", "evidence": "illustrative",
                                "ops": ops}), encoding="utf-8")
    first = {"standard": ("AveragePool", "averagepool-pads-count-include-pad"),
             "ethos-u": ("Conv", "conv-stride-above-3-padding")}[sweep]
    assert load_profile(str(path)).ops[first[0]]["constraints"][0]["id"] == first[1]


@pytest.mark.torch
@pytest.mark.slow
def test_the_ethos_u_sweep_is_torch_points_named_after_their_factories() -> None:
    """The Ethos-U probe lowers PyTorch modules: every point of the ethos-u sweep is a factory of
    npu_gate/calibrate/torch_points.py, on both sides of a limit of Vela 5.2.0's document; the
    first point of each family exports (a torch export takes seconds) with the measured node."""
    from npu_gate.calibrate.torch_points import FACTORIES

    for family in SWEEPS["ethos-u"]():
        assert family.node_of(family.points[0]) in {n.name for n in family.points[0].build().graph.node}
    points = [p for f in SWEEPS["ethos-u"]() for p in f.points]
    assert [p.factory for p in points] == [f"torch_points:{name}" for name in FACTORIES]
    assert [p.id for p in points][:5] == ["conv-k3-s1-p1", "conv-k3-s2-p1", "conv-k3-s3-p1", "conv-k4-s4-p0",
                                           "conv-k5-s4-p2"]


@pytest.mark.torch
@pytest.mark.slow
def test_a_torch_point_is_probed_through_its_factory(tmp_path: Path) -> None:
    """measure() exports a torch point beside a copy of torch_points.py and hands the compiler the
    factory, that folder and the input shape (the Ethos-U driver lowers the module from there)."""
    family = next(f for f in SWEEPS["ethos-u"]() if f.op == "ConvTranspose")
    family = Family(family.id, family.op, family.points[:1], family.constraints)
    record = measure(FakeCompiler(), "fake1", Path(sys.executable), [family], keep=tmp_path / "work")
    assert [(p["point"], p["status"]) for p in record["points"]] == [("convtranspose-k2-s2", "ok")]
    request = json.loads(next((tmp_path / "work" / "points").rglob("request.json")).read_text(encoding="utf-8"))
    assert request["factory"] == "torch_points:convtranspose_k2_s2"
    assert (Path(request["folder"]) / "torch_points.py").is_file()
    assert request["inputs"] == [{"name": "x", "shape": [1, 16, 32, 32]}]
    assert [n["name"] for n in request["graph"]] == ["node_convolution"]


# --- derivation from a record (no compiler) -----------------------------------------------

def test_a_hypothesis_that_predicts_every_point_is_written_citing_the_record() -> None:
    family = TINY["AveragePool"]
    devices = dict(zip([p.id for p in family.points], ["cpu", "npu", "npu"], strict=True))
    derived = derive(_record([family], devices), [family])
    entry = derived.ops["AveragePool"]
    assert entry is not None
    [constraint] = entry["constraints"]
    assert constraint["id"] == "averagepool-pads-count-include-pad"
    assert constraint["doc"] == "cal.calibration.json#AveragePool"
    assert constraint["message"] == ("in calibration AveragePool ran on CPU (or was not built) at every sweep point "
                                     "failing this constraint (1 of 3 points off the NPU; "
                                     "cal.calibration.json#AveragePool)")
    assert derived.verdicts["AveragePool"]["verdict"] == "constrained"
    assert derived.verdicts["AveragePool"]["measured"] == [["averagepool-k3-s1-pad1-include0", "cpu"],
                                                           ["averagepool-k3-s1-pad1-include1", "npu"],
                                                           ["averagepool-k3-s1-pad0-include0", "npu"]]


def test_a_hypothesis_message_follows_what_was_measured() -> None:
    """A hypothesis may say what the sweep did not measure; the written message keeps it after the counts."""
    from dataclasses import replace

    family = TINY["AveragePool"]
    [hypothesis] = family.constraints
    said = replace(family, constraints=[{**hypothesis, "message": "kernels other than 3 were not measured"}])
    devices = dict(zip([p.id for p in family.points], ["cpu", "npu", "npu"], strict=True))
    entry = derive(_record([said], devices), [said]).ops["AveragePool"]
    assert entry is not None
    assert entry["constraints"][0]["message"] == (
        "in calibration AveragePool ran on CPU (or was not built) at every sweep point failing this constraint "
        "(1 of 3 points off the NPU; cal.calibration.json#AveragePool); kernels other than 3 were not measured")


def test_a_hypothesis_may_restate_a_base_constraint_under_its_id(tmp_path: Path) -> None:
    """The ethos-u sweep's hypotheses are the document's rules, with the ethos-u55 ids: the trial
    placement tries the id once (no duplicate-id profile), the measured one replaces the base's."""
    family = TINY["AveragePool"]
    [hypothesis] = family.constraints
    base_path = tmp_path / "base.json"
    base_path.write_text(json.dumps({"name": "base", "description": "d", "source": "s", "evidence": "illustrative",
                                     "ops": {"AveragePool": {"constraints": [{**hypothesis, "message": "vendor"}]}}}),
                         encoding="utf-8")
    devices = dict(zip([p.id for p in family.points], ["cpu", "npu", "npu"], strict=True))
    derived = derive(_record([family], devices), [family], load_profile(str(base_path)))
    assert derived.verdicts["AveragePool"]["verdict"] == "constrained"
    entry = derived.ops["AveragePool"]
    assert entry is not None
    assert [c["id"] for c in entry["constraints"]] == [hypothesis["id"]]
    assert entry["constraints"][0]["message"].startswith("in calibration AveragePool ran on CPU")


@pytest.mark.parametrize(("devices", "verdict", "written", "against"), [
    (["npu", "cpu", "cpu"], "unexplained", False, [0, 1, 2]),  # contradicts the hypothesis: nothing is written
    (["npu", "npu", "npu"], "npu", True, None),  # no condition seen: the op without constraints
    (["cpu", "cpu", "split"], "cpu", False, None),  # never on the NPU: left out (no base)
    (["cpu", None, "npu"], "unexplained", False, [1]),  # a crash counts as "not on the NPU"
    ([None, "npu", "npu"], "constrained", True, None),  # ... and the hypothesis excludes it
])
def test_what_is_claimed_from_the_points(devices: list[str | None], verdict: str, written: bool,
                                         against: list[int] | None) -> None:
    family = TINY["AveragePool"]
    derived = derive(_record([family], dict(zip([p.id for p in family.points], devices, strict=True))), [family])
    assert derived.verdicts["AveragePool"]["verdict"] == verdict
    assert ("AveragePool" in derived.ops) is written
    assert derived.verdicts["AveragePool"].get("contradicted_by") == \
        (None if against is None else [family.points[i].id for i in against])


def test_mixed_points_without_a_hypothesis_are_unexplained() -> None:
    family = Family("relu-mixed", "Relu", [single("relu-a", "Relu"), single("relu-b", "Relu")])
    derived = derive(_record([family], {"relu-a": "npu", "relu-b": "cpu"}), [family])
    assert derived.ops == {}
    assert derived.verdicts["Relu"]["verdict"] == "unexplained"
    assert derived.verdicts["Relu"]["hypotheses"] == [] and derived.verdicts["Relu"]["contradicted_by"] == ["relu-b"]


def test_the_base_claim_is_kept_where_the_points_agree_and_removed_where_they_do_not() -> None:
    base = load_profile("rknn-toolkit2-v2.1")  # Softmax: softmax-batch-1 (input dim 0 at most 1); lists Erf
    softmax = Family("softmax", "Softmax", [single("softmax-b1", "Softmax", axis=-1),
                                            single("softmax-b2", "Softmax", {"x": ("float32", [2, 16, 32, 32])},
                                                   axis=-1)])
    erf, relu = TINY["Erf"], TINY["Relu"]
    abs_ = Family("abs", "Abs", [single("abs-x", "Abs")])
    devices = {"softmax-b1": "npu", "softmax-b2": "npu", erf.points[0].id: "cpu", relu.points[0].id: "npu",
               "abs-x": "cpu"}
    derived = derive(_record([softmax, erf, relu, abs_], devices), [softmax, erf, relu, abs_], base)
    assert derived.ops["Softmax"] == {"constraints": [], "note": (
        "measured on the NPU at all 2 sweep points (softmax; cal.calibration.json#Softmax); dropped from the base, "
        "contradicted by the points: softmax-batch-1")}
    assert derived.ops["Erf"] is None  # the base lists it: null removes it
    assert "Abs" not in derived.ops  # not in the base: nothing to remove
    assert derived.ops["Relu"] is not None and derived.ops["Relu"]["constraints"] == []
    one = derive(_record([softmax], {"softmax-b1": "npu", "softmax-b2": "npu"}), [
        Family("softmax", "Softmax", softmax.points[:1])], base)
    assert one.ops["Softmax"] is not None
    assert [c["id"] for c in one.ops["Softmax"]["constraints"]] == ["softmax-batch-1"]  # kept: not contradicted


def test_a_record_from_another_sweep_is_refused() -> None:
    with pytest.raises(ValueError, match="no measurement for 7 sweep point"):
        derive(_record([], {}), SWEEPS["tiny"]())


def _pattern_record(family: Family, fused: dict[str, bool]) -> dict[str, Any]:
    points = []
    for p in family.points:
        names = [n.name for n in p.build().graph.node]
        rows = {n: [1] if fused[p.id] or n == "conv" else [i + 2] for i, n in enumerate(names)}
        points.append({"point": p.id, "family": family.id, "status": "ok",
                       "nodes": {n: ["npu", "npu", None] for n in names}, "rows": rows})
    candidates = candidates_from(load_profile("rknn-rk3588-fused"))
    return {"record_name": "cal.calibration.json", "points": points, "candidates": candidates}


def test_a_pattern_is_carried_only_when_every_point_it_matches_was_fused() -> None:
    family = next(f for f in SWEEPS["standard"]() if f.id == "pattern-hardswish")
    ids = [p.id for p in family.points]
    assert ids == ["hardswish-after-conv", "hardswish-near-miss-clip-0-5", "hardswish-near-miss-div-5"]
    good = derive(_pattern_record(family, {ids[0]: True, ids[1]: False, ids[2]: False}), [family])
    [pattern] = good.patterns
    assert pattern["name"] == "hardswish-add-clip-mul-div"
    assert pattern["evidence"] == (
        "calibration (cal.calibration.json#pattern-hardswish-add-clip-mul-div): fused by the compiler at "
        "hardswish-after-conv; not matched here: hardswish-near-miss-clip-0-5, hardswish-near-miss-div-5")
    wider = derive(_pattern_record(family, {ids[0]: True, ids[1]: True, ids[2]: False}), [family])
    assert len(wider.patterns) == 1
    assert wider.verdicts["pattern hardswish-add-clip-mul-div"]["fused_but_not_matched"] == [ids[1]]
    wrong = derive(_pattern_record(family, {ids[0]: False, ids[1]: False, ids[2]: False}), [family])
    assert wrong.patterns == []
    assert wrong.verdicts["pattern hardswish-add-clip-mul-div"]["contradicted_by"] == [ids[0]]


def test_compiler_fused_needs_one_npu_op_holding_every_pattern_node() -> None:
    nodes = {"conv": ["npu", "npu", None], "a": ["fused", "npu", "ConvX"], "b": ["fused", "npu", "ConvX"]}
    assert compiler_fused({"status": "ok", "nodes": nodes, "rows": {"conv": [1], "a": [1], "b": [1, 2]}})
    assert not compiler_fused({"status": "ok", "nodes": nodes, "rows": {"conv": [1], "a": [1], "b": [2]}})
    assert not compiler_fused({"status": "ok", "nodes": {**nodes, "b": ["cpu", "cpu", None]},
                               "rows": {"a": [1], "b": [1]}})
    assert not compiler_fused({"status": "crashed", "nodes": nodes, "rows": {"a": [1], "b": [1]}})


def test_the_rank_adapter_rule_is_carried_only_when_it_predicts_every_point() -> None:
    family = Family("adapters", "Reshape", [single("a-2x8", "Relu", {"x": ("float32", [2, 8])}),
                                            single("a-2x12", "Relu", {"x": ("float32", [2, 12])}),
                                            single("a-4d", "Relu")], kind=ADAPTER)

    def record(added: dict[str, list[list[str]]]) -> dict[str, Any]:
        points = [{"point": p, "family": "adapters", "status": "ok", "nodes": {}, "added": a} for p, a in added.items()]
        return {"record_name": "r.json", "points": points,
                "candidates": candidates_from(load_profile("rknn-rk3588-fused"))}

    agree = derive(record({"a-2x8": [["Reshape", "npu"], ["Reshape", "npu"]],
                           "a-2x12": [["Reshape", "cpu"], ["Reshape", "cpu"]], "a-4d": []}), [family])
    assert agree.rank_adapters is not None and agree.rank_adapters["npu_when"] == {"axis": -1, "multiple_of": 8}
    assert agree.verdicts["rank_adapters"]["verdict"] == "confirmed"
    against = derive(record({"a-2x8": [["Reshape", "npu"], ["Reshape", "npu"]],
                             "a-2x12": [["Reshape", "npu"], ["Reshape", "cpu"]], "a-4d": []}), [family])
    assert against.rank_adapters is None
    assert against.verdicts["rank_adapters"]["contradicted_by"] == ["a-2x12"]


# --- the built-in calibrated profile ------------------------------------------------------

@pytest.mark.slow
def test_the_builtin_rknn_rk3588_profile_is_what_its_record_derives() -> None:
    """Re-derived without the compiler: the checked-in profile and record cannot drift apart."""
    record = json.loads((profile_dir() / "rknn-rk3588.calibration.json").read_text(encoding="utf-8"))
    profile = json.loads((profile_dir() / "rknn-rk3588.json").read_text(encoding="utf-8"))
    doc, derived = derive_profile(record)
    assert doc == profile, "regenerate: the command in the profile's source"
    assert derived.verdicts == record["verdicts"]
    assert record_json(record) == (profile_dir() / "rknn-rk3588.calibration.json").read_text(encoding="utf-8")


@pytest.mark.torch
@pytest.mark.slow
@pytest.mark.parametrize("name", ["ethos-u55-128", "ethos-u65-256", "ethos-u85-256"])
def test_the_builtin_ethos_u_profiles_are_what_their_records_derive(name: str) -> None:
    """The ethos-u sweep measured with ExecuTorch 1.5.1 + Vela 5.2.0, re-derived without the
    compiler (the mixed ops' points are exported again for the trial placements)."""
    text = (profile_dir() / f"{name}.calibration.json").read_text(encoding="utf-8")
    record = json.loads(text)
    doc, derived = derive_profile(record)
    assert doc == json.loads((profile_dir() / f"{name}.json").read_text(encoding="utf-8"))
    assert derived.verdicts == record["verdicts"]
    assert record_json(record) == text
    assert record["compiler"] == {"name": "ethos-u-vela", "version": "5.2.0", "target": name}
    assert record["sweep"] == "ethos-u" and record["timings"]["points"] == 17
    assert record["command"] in load_profile(name).source


def test_the_builtin_record_says_what_was_measured() -> None:
    record = json.loads((profile_dir() / "rknn-rk3588.calibration.json").read_text(encoding="utf-8"))
    assert record["compiler"] == {"name": "rknn-toolkit2", "version": "2.5.0", "target": "rk3588"}
    assert record["timings"]["mode"] == "batch" and record["timings"]["points"] == 492
    assert record["command"] in load_profile("rknn-rk3588").source
    verdicts = {k: v["verdict"] for k, v in record["verdicts"].items()}
    assert sorted(k for k, v in verdicts.items() if v == "unexplained") == ["Transpose"]
    assert sorted(k for k, v in verdicts.items() if v == "constrained") == [
        "Add", "AveragePool", "ConvTranspose", "Max", "Pad", "Pow", "Relu", "Reshape", "Resize", "Slice"]
    assert verdicts["rank_adapters"] == "contradicted"
    crashed = sorted(p["point"] for p in record["points"] if p["status"] == "crashed")
    assert crashed == ["relu-1x16x32x32-int8", "resize-cubic-asymmetric-x0.5", "resize-cubic-half_pixel-x2"]
    assert "rknn-rk3588" in builtin_profile_names() and "rknn-rk3588.calibration" not in builtin_profile_names()


def test_the_cleanup_verdicts_of_the_builtin_record() -> None:
    """Every eliminate and lower family of the standard sweep confirmed on RKNN-Toolkit2 2.5.0, with
    its near misses; the written entries replace the base's hand-measured ones (#20)."""
    verdicts = _builtin_record()["verdicts"]
    cleanup = {k: v for k, v in verdicts.items() if k.startswith(("eliminates ", "lowers "))}
    assert {k: v["verdict"] for k, v in cleanup.items()} == {k: "confirmed" for k in cleanup}
    assert cleanup["eliminates BatchNormalization identity"]["points"] == [
        ["batchnormalization-identity", "eliminated", "eliminated"],
        ["batchnormalization-identity-epsilon-0.1", "eliminated", "eliminated"],
        ["batchnormalization-bias-0.1", "kept", "kept"], ["batchnormalization-variance-2", "kept", "kept"]]
    assert cleanup["lowers Sum Add"]["points"] == [["sum-three-convs", "lowered"], ["sum-two-inputs", "lowered"]]
    profile = load_profile("rknn-rk3588")
    assert [(e["op"], e["when"]) for e in profile.eliminates or []] == [
        ("Identity", "always"), ("Dropout", "always"), ("Cast", "same-dtype"), ("Cast", "float-to-float"),
        ("Reshape", "reshape-chain"), ("Flatten", "reshape-chain"), ("Unsqueeze", "reshape-chain"),
        ("Squeeze", "reshape-chain"), ("Transpose", "inverse-transpose-pair"), ("Reshape", "around-transpose"),
        ("Flatten", "into-gemm"), ("BatchNormalization", "into-conv"), ("BatchNormalization", "identity"),
        ("Mul", "into-conv"), ("Mul", "identity"), ("Concat", "identity"), ("Reshape", "into-transpose"),
        ("Add", "into-conv"), ("Add", "identity"), ("Slice", "identity")]
    # the timm set's identities (#20): the constant second only, the whole tensor only
    assert cleanup["eliminates Mul identity"]["points"] == [
        ["mul-by-one", "eliminated", "eliminated"], ["mul-by-1.38", "kept", "kept"],
        ["mul-one-by-tensor", "kept", "kept"]]
    assert cleanup["eliminates Add identity"]["points"] == [
        ["add-zero", "eliminated", "eliminated"], ["add-zero-first", "kept", "kept"],
        ["add-zero-per-channel", "eliminated", "eliminated"], ["add-0.1", "kept", "kept"]]
    assert cleanup["eliminates Slice identity"]["points"] == [
        ["slice-all-channels", "eliminated", "eliminated"], ["slice-all-channels-end-max", "eliminated", "eliminated"],
        ["slice-all-channels-step-1", "eliminated", "eliminated"], ["slice-first-8-channels", "kept", "kept"]]
    # issue 20's folding families: a Reshape merged into its Transpose, a Conv's separate bias Add
    # and the scalar Mul / Add after it (paddle2onnx), with their near misses
    assert cleanup["eliminates Reshape into-transpose"]["points"] == [
        ["reshape-4d-3d-transposed", "eliminated", "eliminated"],
        ["reshape-4d-3d-transposed-64", "eliminated", "eliminated"],
        ["reshape-4d-2d-transposed", "eliminated", "eliminated"], ["reshape-4d-row-transposed", "kept", "kept"],
        ["reshape-4d-4d-transposed-0312", "kept", "kept"], ["reshape-4d-4d-transposed-0231", "kept", "kept"]]
    assert cleanup["eliminates Add into-conv"]["points"] == [
        ["add-per-channel-after-conv", "eliminated", "eliminated"],
        ["add-scalar-after-conv", "eliminated", "eliminated"],
        ["add-tensor-after-conv", "kept", "kept"], ["add-per-channel-after-relu", "kept", "kept"],
        ["affine-bias-after-conv", "eliminated", "eliminated"], ["affine-shift-after-conv", "eliminated", "eliminated"],
        ["affine-shift-after-conv-identities", "eliminated", "eliminated"], ["affine-shift-after-relu", "kept", "kept"],
        ["affine-shift-after-conv-output-shared", "kept", "kept"]]
    assert cleanup["eliminates Mul into-conv"]["points"][4:] == [
        ["affine-mul-after-conv", "eliminated", "eliminated"],
        ["affine-mul-after-conv-identities", "eliminated", "eliminated"], ["affine-mul-after-relu", "kept", "kept"]]
    assert all(e["evidence"].startswith("measured by rknn-toolkit2 2.5.0 rk3588: calibration "
                                        "rknn-rk3588.calibration.json#") for e in profile.eliminates or [])
    assert [(e["op"], e["to"]) for e in profile.lowers or []] == [("Sum", "Add")]
    # the vendor's "batchsize: 1" for Slice, contradicted by slices on axis 0 on the NPU, is dropped
    assert verdicts["Slice"]["dropped_from_base"] == ["slice-batch-1"]


def test_a_contradicted_cleanup_entry_removes_the_bases_and_unmeasured_ones_are_kept() -> None:
    """An Identity the compiler kept (its own op, on the NPU) contradicts ``Identity always``: not
    written, and the base's entry for it goes; the base's other entries stay with their evidence."""
    from npu_gate.calibrate.sweeps import cleanup_families

    family = next(f for f in cleanup_families() if f.id == "eliminate-identity")
    sums = next(f for f in cleanup_families() if f.id == "lower-sum-to-add")
    points = [{"point": "identity-between-relus", "family": family.id, "status": "ok", "seconds": 0,
               "nodes": {"before": ["npu", "npu", None], "identity": ["npu", "npu", None],
                         "after": ["npu", "npu", None]}},
              {"point": "sum-three-convs", "family": sums.id, "status": "ok", "seconds": 0,
               "nodes": {"sum": ["npu", "npu", "ConvRelu"]}},
              {"point": "sum-two-inputs", "family": sums.id, "status": "ok", "seconds": 0,
               "nodes": {"sum": ["cpu", "cpu", None]}}]
    record = {"record_name": "cal.calibration.json", "compiler": {"name": "c", "version": "1", "target": "t"},
              "points": points}
    base = load_profile("rknn-toolkit2-v2.1")
    derived = derive(record, [family, sums], base)
    assert derived.verdicts["eliminates Identity always"] == {
        "family": "eliminate-identity", "points": [["identity-between-relus", "eliminated", "kept"]],
        "verdict": "contradicted", "contradicted_by": ["identity-between-relus"]}
    assert derived.verdicts["lowers Sum Add"]["contradicted_by"] == ["sum-two-inputs"]
    assert derived.eliminates == [e for e in base.eliminates or [] if e["op"] != "Identity"]
    assert derived.lowers == []  # the base's Sum lowering, contradicted, is removed


def test_reshape_is_constrained_by_the_measured_rule() -> None:
    """Issue 20: the 95 Reshape points (31 before, 40 added, 10 that move dims of size 1 or nearly, 14 that
    move work into the batch dim) are predicted by the four constraints of the sweep's hypothesis; the
    shuffle triplet's 4 folded Reshapes are eliminated by the derived clean-up (Reshape around-transpose)
    and left out of the test."""
    verdict = _builtin_record()["verdicts"]["Reshape"]
    assert (verdict["verdict"], verdict["points"], verdict["on_npu"]) == ("constrained", 95, 53)
    assert verdict["constraints"] == ["reshape-batch-moved-output-plane-multiple-of-8",
                                      "reshape-input-plane-multiple-of-8", "reshape-rank4-keeps-last-dim-or-channels",
                                      "reshape-unit-plane-channels-multiple-of-8"]
    assert verdict["eliminated"] == [f"reshape-shuffle-1x16x{w}x{w}-{m}" for w in (2, 4)
                                     for m in ("reshape", "reshape-back")]
    off = {pid: outcome for pid, outcome in verdict["measured"] if outcome != "npu"}
    assert off == {
        **{f"reshape-1x{c}x1x1-to-1x{c}": "cpu" for c in (7, 9, 12, 15, 17, 33)},
        **{f"reshape-{a}-to-{b}": "cpu" for a, b in (
            ("1x16x6x6", "1x576"), ("1x12x5x5", "1x300"), ("1x16x6x6", "16x36"), ("1x16x2x2", "1x2x8x2x2"),
            ("1x12x5x5", "1x12x25"), ("1x16x6x6", "1x16x36"),
            ("1x16x2x2", "1x64"), ("1x16x3x4", "1x192"), ("1x24x6x6", "1x864"), ("1x1x1x36", "1x36"),
            ("1x16x1x36", "1x16x36"), ("1x16x6x6", "1x36x16"), ("1x16x6x6", "576"), ("1x12x1x1", "12"),
            ("1x16x6x6", "1x2x8x6x6"), ("1x16x3x3", "1x2x8x3x3"),
            ("1x6x26x26", "1x6x1x676"), ("1x6x13x13", "1x6x1x169"), ("1x82x10x10", "82x1x1x100"),
            ("1x82x10x10", "1x82x1x100"), ("1x16x10x10", "16x1x1x100"), ("1x16x6x6", "1x1x1x576"),
            ("1x12x10x10", "1x12x1x100"), ("1x16x2x2", "1x8x2x4"), ("1x8x1x1", "1x2x2x2"), ("1x24x3x3", "1x8x3x9"),
            ("1x5x3x1", "1x1x1x15"), ("1x7x1x5", "1x1x5x7"), ("1x16x4x4", "32x2x2x2"), ("1x16x6x6", "48x2x3x2"),
            ("1x16x12x12", "96x2x6x2"), ("1x16x16x4", "64x4x2x2"))},
        **{f"reshape-shuffle-1x16x{w}x{w}-{m}": "folded" for w in (2, 4) for m in ("reshape", "reshape-back")}}
    written = json.loads((profile_dir() / "rknn-rk3588.json").read_text(encoding="utf-8"))["ops"]["Reshape"]
    assert [c["id"] for c in written["constraints"]] == [
        "reshape-input-plane-multiple-of-8", "reshape-unit-plane-channels-multiple-of-8",
        "reshape-rank4-keeps-last-dim-or-channels", "reshape-batch-moved-output-plane-multiple-of-8"]
    assert all(c["doc"] == "rknn-rk3588.calibration.json#Reshape" for c in written["constraints"])


def _reshape_model(path: Path, shape: list[int], to: list[int]) -> Path:
    from npu_gate.calibrate.sweeps import between, i64

    point = between("r", "Reshape", shape, {"shape": i64(*to)}, ["shape"])
    path.write_bytes(point.build().SerializeToString())
    return path


# (input, output, placement, the constraints that fail): issue 20's real-model Reshapes first (nudenet's and
# ddddocr common_det's YOLO heads, CPU in the toolkit's op table), then the sweep's shapes the brief lists
RESHAPE_PLACEMENTS = [
    ([1, 82, 10, 10], [82, 1, 1, 100], "cpu",
     "reshape-rank4-keeps-last-dim-or-channels reshape-batch-moved-output-plane-multiple-of-8"),
    ([1, 6, 26, 26], [1, 6, 1, 676], "cpu", "reshape-rank4-keeps-last-dim-or-channels"),
    ([1, 6, 13, 13], [1, 6, 1, 169], "cpu", "reshape-rank4-keeps-last-dim-or-channels"),
    ([1, 16, 6, 6], [1, 16, 36], "cpu", "reshape-input-plane-multiple-of-8"),
    ([1, 16, 6, 6], [1, 576], "cpu", "reshape-input-plane-multiple-of-8"),
    ([1, 12, 5, 5], [1, 300], "cpu", "reshape-input-plane-multiple-of-8 reshape-unit-plane-channels-multiple-of-8"),
    ([1, 16, 6, 6], [16, 36], "cpu", "reshape-input-plane-multiple-of-8"),
    ([1, 12, 5, 5], [1, 12, 25], "cpu", "reshape-input-plane-multiple-of-8 reshape-unit-plane-channels-multiple-of-8"),
    ([1, 7, 1, 1], [1, 7], "cpu", "reshape-unit-plane-channels-multiple-of-8"),
    ([1, 16, 8, 8], [1, 16, 64], "npu", None),
    ([1, 16, 6, 6], [1, 16, 3, 12], "npu", None),
    ([1, 16, 6, 6], [1, 8, 12, 6], "npu", None),
    ([1, 16, 1, 1], [1, 16], "npu", None),
    ([1, 32, 1, 1], [1, 32], "npu", None),
    ([1, 16, 26, 26], [1, 16, 1, 676], "npu", None),
    ([1, 16, 8, 8], [16, 1, 1, 64], "npu", None),
    ([1, 1, 1], [1], "npu", None),  # inputs of rank 3 or less were not measured: the vendor's claim stands
    ([1, 82, 100], [1, 82, 10, 10], "npu", None),
    # openwakeword's embedding model (tf2onnx): Reshapes that only move dims of size 1 run as a Transpose
    ([1, 76, 34, 1], [1, 1, 76, 34], "npu", None),
    ([1, 96, 1, 1], [1, 1, 1, 96], "npu", None),
    ([1, 1, 5, 3], [1, 5, 3, 1], "npu", None),
    ([1, 7, 1, 5], [1, 1, 5, 7], "cpu", "reshape-rank4-keeps-last-dim-or-channels"),  # 7 and 5 swap too
    ([1, 5, 3, 1], [1, 1, 1, 15], "cpu", "reshape-rank4-keeps-last-dim-or-channels"),  # 5 and 3 merge
]


@pytest.mark.parametrize(("shape", "to", "placement", "failed"), RESHAPE_PLACEMENTS,
                         ids=[f"{'x'.join(map(str, a))}-to-{'x'.join(map(str, b))}"
                              for a, b, _, _ in RESHAPE_PLACEMENTS])
def test_reshape_placements_under_rknn_rk3588(tmp_path: Path, shape: list[int], to: list[int], placement: str,
                                               failed: str | None) -> None:
    """Relu -> Reshape -> Relu, placed by the built-in profile (no compiler): the Reshape where the
    compiler ran it, with exactly the constraints that say why when it is CPU."""
    from npu_gate.pipeline import inspect_model

    result = inspect_model(_reshape_model(tmp_path / "m.onnx", shape, to), load_profile("rknn-rk3588"))
    assert [(n.name, n.placement) for n in result.nodes] == [("before", "npu"), ("reshape", placement),
                                                             ("after", "npu")]
    assert [f.constraint for f in result.findings if f.node == "reshape" and f.constraint] == \
        (failed.split() if failed else [])
    assert [p.device for p in result.partitions] == (["npu"] if placement == "npu" else ["npu", "cpu", "npu"])


def test_reshape_finding_says_what_failed_and_what_was_measured(tmp_path: Path) -> None:
    """The nudenet head's finding: the closest way to meet the constraint, then the calibration's words."""
    from npu_gate.pipeline import inspect_model

    result = inspect_model(_reshape_model(tmp_path / "m.onnx", [1, 82, 10, 10], [82, 1, 1, 100]),
                           load_profile("rknn-rk3588"))
    finding, moved = [f for f in result.findings if f.node == "reshape" and f.constraint]
    assert finding.message.startswith(
        "reshape-rank4-keeps-last-dim-or-channels: input 0 dims -2 x -1 = 10 x 10 = 100 is not a multiple of 8")
    assert "38 of 91 points off the NPU" in finding.message
    assert moved.message.startswith("reshape-batch-moved-output-plane-multiple-of-8: output 0 dim 0 = 82 is above "
                                    "the maximum 1")


@pytest.mark.parametrize("width", [2, 4])
def test_channel_shuffle_runs_on_the_npu_under_rknn_rk3588(tmp_path: Path, width: int) -> None:
    """shufflenet's shuffle (Reshape to 5-D, Transpose, Reshape back, last dim a width of 2 or 4):
    one NPU partition, as the compiler built it; its two Reshapes are eliminated, as the compiler
    folds them (the base's ``eliminates`` around-transpose, #20)."""
    from npu_gate.calibrate.sweeps import shuffle_point
    from npu_gate.pipeline import inspect_model

    (tmp_path / "m.onnx").write_bytes(shuffle_point(width, "reshape").build().SerializeToString())
    result = inspect_model(tmp_path / "m.onnx", load_profile("rknn-rk3588"))
    assert [(n.name, n.op_type, n.placement, n.partition) for n in result.nodes] == [
        ("before", "Relu", "npu", 0), ("reshape", "Reshape", "eliminated", None),
        ("transpose", "Transpose", "npu", 0), ("reshape_back", "Reshape", "eliminated", None),
        ("after", "Relu", "npu", 0)]
    assert [p.device for p in result.partitions] == ["npu"]
    assert result.findings == []


@pytest.mark.parametrize(("reduce", "axis", "fused"), [("ReduceL2", -1, "l2-normalize-reducel2-clip-expand-div"),
                                                  ("ReduceL2", 1, "l2-normalize-reducel2-clip-expand-div"),
                                                  ("ReduceL1", -1, "l1-normalize-reducel1-clip-expand-div"),
                                                  ("ReduceMax", -1, None)])
def test_f_normalize_is_one_npu_op_under_rknn_rk3588(tmp_path: Path, reduce: str, axis: int,
                                                     fused: str | None) -> None:
    """F.normalize as the exporters write it (edgenext's attention, #20): the four nodes one fused
    NPU op, as the compiler built them (exNorm); with ReduceMax in place of the norm no pattern
    matches and ReduceMax stays on the CPU, as the compiler ran it."""
    from npu_gate.calibrate.sweeps import normalize_point
    from npu_gate.pipeline import inspect_model

    (tmp_path / "m.onnx").write_bytes(normalize_point("p", reduce, axis).build().SerializeToString())
    result = inspect_model(tmp_path / "m.onnx", load_profile("rknn-rk3588"))
    assert [(n.fused or {}).get("pattern") for n in result.nodes] == [fused] * 4
    placements = [n.placement for n in result.nodes]
    assert placements == (["npu"] * 4 if fused else ["cpu", "npu", "npu", "npu"])
    assert [p.device for p in result.partitions] == (["npu"] if fused else ["cpu", "npu"])


def test_softmax_at_batch_4_runs_on_the_npu_under_rknn_rk3588(tmp_path: Path) -> None:
    """The vendor's batch-1 remark for Softmax is contradicted by the compiler (softmax-batch family:
    exSoftmax13 at batch 4), so mobilevit's attention Softmax (batch = patch area 4) is not a CPU
    node; the base profile keeps the vendor's claim."""
    from npu_gate.calibrate.sweeps import single
    from npu_gate.pipeline import inspect_model

    point = single("p", "Softmax", {"x": ("float32", [4, 2, 16, 16])}, axis=-1)
    (tmp_path / "m.onnx").write_bytes(point.build().SerializeToString())
    measured = inspect_model(tmp_path / "m.onnx", load_profile("rknn-rk3588"))
    assert [(n.placement, n.reasons) for n in measured.nodes] == [("npu", [])]
    vendor = inspect_model(tmp_path / "m.onnx", load_profile("rknn-toolkit2-v2.1"))
    assert [n.placement for n in vendor.nodes] == ["cpu"]
    assert [f.constraint for f in vendor.findings if f.constraint] == ["softmax-batch-1"]


# the finding's actual: each alternative's value in the constraint's order (output dim 0, input dim 0, the
# output's last two dims multiplied, its last dim, its dims, the output's rank twice, the input's rank twice)
MOVED_192 = [192, 1, 4, 2, [192, 2, 2, 2], 4, 4, 4, 4]
MOVED_64 = [64, 1, 4, 2, [64, 4, 2, 2], 4, 4, 4, 4]


@pytest.mark.parametrize(("shape", "to", "actual"), [
    ([1, 96, 4, 4], [192, 2, 2, 2], MOVED_192), ([1, 64, 16, 16], [512, 2, 8, 2], None),
    ([1, 16, 16, 4], [64, 4, 2, 2], MOVED_64), ([1, 16, 8, 4], [32, 2, 4, 2], None),
    ([1, 16, 4, 4], [4, 4, 4, 4], None), ([1, 16, 4, 4], [1, 64, 2, 2], None)])
def test_a_reshape_into_the_batch_dim_under_rknn_rk3588(tmp_path: Path, shape: list[int], to: list[int],
                                                       actual: list[Any] | None) -> None:
    """timm mobilevit's patch unfold at its 4x4 stage, x.reshape(B*C*nh, ph, nw, pw) of [1,96,4,4]: the
    compiler ran such Reshapes on the CPU where the output's last two dims multiply to 4 (reshape-batch-
    moved family), whatever the input's plane; [1,64,16,16] -> [512,2,8,2] (stage 2) and the same
    shapes kept at batch 1 ran on the NPU."""
    from npu_gate.calibrate.sweeps import i64
    from npu_gate.pipeline import inspect_model

    point = between("p", "Reshape", shape, {"shape": i64(*to)}, ["shape"])
    (tmp_path / "m.onnx").write_bytes(point.build().SerializeToString())
    result = inspect_model(tmp_path / "m.onnx", load_profile("rknn-rk3588"))
    assert [n.placement for n in result.nodes if n.op_type == "Reshape"] == ["cpu" if actual else "npu"]
    failed = [(f.constraint, f.actual) for f in result.findings if f.rule == "op-constraint"]
    assert failed == ([("reshape-batch-moved-output-plane-multiple-of-8", actual)] if actual else [])


@pytest.mark.parametrize(("shape", "axis", "start", "end", "failed"), [
    ([20, 1, 4096], 0, -1, -(2**63) + 1, ["slice-reverse-last-axis-only"]),  # captcha-whisperer's backward LSTM input
    ([1, 16, 8, 8], 2, -1, -(2**63) + 1, ["slice-reverse-last-axis-only"]),
    ([1, 16, 8, 8], 3, -1, -(2**63) + 1, []),  # x.flip(-1)
    ([1, 20, 64], -1, -1, -65, []),
    ([1, 16, 8, 8], 3, -2, -9, ["slice-reverse-whole-axis"]),  # x[..., 6::-1]: 7 of the 8
])
def test_a_reversal_runs_on_the_npu_only_along_the_whole_last_axis(tmp_path: Path, shape: list[int], axis: int,
                                                                   start: int, end: int, failed: list[str]) -> None:
    """The slice-reverse family (#20): a Slice of step -1 ran on the NPU only when it reverses the
    whole last axis; the calibrated profile says which of its two constraints a CPU one fails."""
    from npu_gate.calibrate.sweeps import i64
    from npu_gate.pipeline import inspect_model

    point = between("p", "Slice", shape, {"starts": i64(start), "ends": i64(end), "axes": i64(axis),
                                          "steps": i64(-1)}, ["starts", "ends", "axes", "steps"])
    (tmp_path / "m.onnx").write_bytes(point.build().SerializeToString())
    result = inspect_model(tmp_path / "m.onnx", load_profile("rknn-rk3588"))
    assert [n.placement for n in result.nodes if n.op_type == "Slice"] == ["cpu" if failed else "npu"]
    assert [f.constraint for f in result.findings if f.rule == "op-constraint"] == failed


def test_value_constraints_explain_resize_slice_and_pad_from_the_record() -> None:
    """The input-value hypotheses of the sweep predict every measured point of the three ops
    that attribute and shape tests left unexplained; each written constraint cites its points."""
    verdicts = _builtin_record()["verdicts"]
    profile = json.loads((profile_dir() / "rknn-rk3588.json").read_text(encoding="utf-8"))
    ops = ("Resize", "Slice", "Pad")
    cpu = {op: [pid for pid, outcome in verdicts[op]["measured"] if outcome != "npu"] for op in ops}
    assert cpu == {
        "Resize": ["resize-linear-half_pixel-x1.5", "resize-linear-asymmetric-x1.5", "resize-linear-align_corners-x2",
                   "resize-linear-align_corners-x0.5", "resize-linear-align_corners-x3",
                   "resize-linear-align_corners-x1.5", "resize-linear-pytorch_half_pixel-x1.5",
                   "resize-cubic-half_pixel-x2", "resize-cubic-asymmetric-x0.5", "resize-linear-half_pixel-x1.25",
                   "resize-linear-asymmetric-x1.25",
                   "resize-sizes-linear-half_pixel-48x48", "resize-sizes-linear-half_pixel-20x20",
                   "resize-sizes-linear-pytorch_half_pixel-48x48", "resize-sizes-linear-pytorch_half_pixel-20x20",
                   "resize-sizes-linear-asymmetric-48x48", "resize-sizes-linear-align_corners-64x64",
                   "resize-sizes-linear-align_corners-16x16", "resize-sizes-linear-half_pixel-64x48",
                   "resize-sizes-linear-half_pixel-48x64", "resize-sizes-linear-half_pixel-40x40"],
        "Slice": ["slice-axis1-step2", "slice-axis2-step2", "slice-axis3-step2", "slice-reverse-axis0-20x1x64",
                  "slice-reverse-axis1-1x20x64", "slice-reverse-axis0-20x64", "slice-reverse-axis1-1x16x8x8",
                  "slice-reverse-axis2-1x16x8x8", "slice-reverse-axis3-1x16x8x8-from-2-to-9",
                  "slice-reverse-axis2-1x16x8x8-from-2-to-9", "slice-reverse-axis3-1x16x8x8-from-1-to-5",
                  "slice-reverse-axis3-1x16x8x16-from-1-to-9"],
        "Pad": ["pad-ch-constant"]}
    assert {op: (verdicts[op]["verdict"], verdicts[op]["constraints"], verdicts[op]["points"], verdicts[op]["on_npu"])
            for op in ("Resize", "Slice", "Pad")} == {
        "Resize": ("constrained", ["resize-linear-not-align-corners", "resize-linear-scales-measured",
                                   "resize-mode-nearest-or-linear"], 93, 72),
        "Slice": ("constrained", ["slice-reverse-last-axis-only", "slice-reverse-whole-axis",
                                  "slice-steps-1-or-minus-1"], 26, 14),
        "Pad": ("constrained", ["pad-not-c-and-h"], 6, 5)}
    written = {op: {c["id"]: c for c in profile["ops"][op]["constraints"]} for op in ("Resize", "Slice", "Pad")}
    ratios = [0.125, 0.25, 0.3333333, 0.5, 1, 2, 3, 4, 5, 8]  # every one measured on the NPU, no other
    assert written["Resize"]["resize-linear-scales-measured"]["any_of"] == [
        {"attribute": "mode", "in": ["nearest"]},
        {"input": 2, "value": {"elements": [2, 3], "each": True, "in": ratios}},
        {"input": 3, "value": {"elements": [2, 3], "ratio_to_input": 0, "each": True, "in": ratios}}]
    assert written["Resize"]["resize-linear-not-align-corners"]["any_of"] == [
        {"attribute": "mode", "in": ["nearest"]},
        {"attribute": "coordinate_transformation_mode", "not_in": ["align_corners"]},
        {"input": 2, "value": {"elements": [2, 3], "each": True, "in": [1]}},
        {"input": 3, "value": {"elements": [2, 3], "ratio_to_input": 0, "each": True, "in": [1]}}]
    assert {i: c["message"] for i, c in written["Resize"].items() if i != "resize-2d"} == RESIZE_MESSAGES
    assert verdicts["Resize"]["families"] == ["resize-mode-coordinates-scales", "resize-sizes"]
    assert [c["id"] for c in profile["ops"]["Resize"]["constraints"]] == [  # the two families' hypothesis once
        "resize-mode-nearest-or-linear", "resize-linear-not-align-corners", "resize-linear-scales-measured",
        "resize-2d"]
    assert written["Slice"]["slice-steps-1-or-minus-1"]["value"] == {"each": True, "in": [1, -1], "default": [1]}
    assert written["Pad"]["pad-not-c-and-h"]["value"] == {"padded_axes": True, "not_in": [[1, 2]]}
    assert [written[op][i]["doc"] for op, i in (("Resize", "resize-linear-scales-measured"),
                                                 ("Slice", "slice-steps-1-or-minus-1"), ("Pad", "pad-not-c-and-h"))] \
        == ["rknn-rk3588.calibration.json#Resize", "rknn-rk3588.calibration.json#Slice",
            "rknn-rk3588.calibration.json#Pad"]
    assert written["Slice"]["slice-steps-1-or-minus-1"]["message"] == (
        "in calibration Slice ran on CPU (or was not built) at every sweep point failing this constraint "
        "(12 of 26 points off the NPU; rknn-rk3588.calibration.json#Slice)")


MEASURED = ("in calibration Resize ran on CPU (or was not built) at every sweep point failing this constraint "
            "(21 of 93 points off the NPU; rknn-rk3588.calibration.json#Resize)")
RESIZE_MESSAGES = {
    "resize-mode-nearest-or-linear": MEASURED,
    "resize-linear-not-align-corners": f"{MEASURED}; linear align_corners was measured on the NPU only as an "
                                       "identity (H and W ratio 1)",
    "resize-linear-scales-measured": f"{MEASURED}; linear was measured on the NPU at H and W ratios 1/8, 1/4, 1/3, "
                                     "1/2, 1, 2, 3, 4, 5 and 8, on CPU at 1.5, 1.25 and 0.625; other ratios, integer "
                                     "ones (6, 7, 16...) and their reciprocals too, were not measured and are not "
                                     "claimed"}

# Torch-like Resize by sizes on x [1, 3, 40, 24] (not the sweep's shape): roi and scales absent, sizes
# an initializer (the dynamo exporter) or folded from Shape -> Slice -> Concat (the TorchScript exporter).
RESIZE_BY_SIZES = [
    ("nearest asymmetric x2", {"mode": "nearest", "coordinate_transformation_mode": "asymmetric",
                               "nearest_mode": "floor", "sizes": [1, 3, 80, 48]}, "npu", []),
    ("nearest asymmetric x1.5", {"mode": "nearest", "coordinate_transformation_mode": "asymmetric",
                                 "sizes": [1, 3, 60, 36]}, "npu", []),
    ("linear half_pixel x2", {"mode": "linear", "coordinate_transformation_mode": "half_pixel",
                              "sizes": [1, 3, 80, 48]}, "npu", []),
    ("linear half_pixel x0.5 from Shape", {"mode": "linear", "coordinate_transformation_mode": "half_pixel",
                                           "sizes": [1, 3, 20, 12], "sizes_from_shape": True}, "npu", []),
    ("linear half_pixel H x3, W x0.5", {"mode": "linear", "coordinate_transformation_mode": "half_pixel",
                                        "sizes": [1, 3, 120, 12]}, "npu", []),
    ("linear half_pixel x1.5", {"mode": "linear", "coordinate_transformation_mode": "half_pixel",
                                "sizes": [1, 3, 60, 36]}, "cpu",
     [("resize-linear-scales-measured", ["linear", "absent", [1.5, 1.5]])]),
    ("linear pytorch_half_pixel H x2, W x1.5 from Shape", {
        "mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel", "sizes": [1, 3, 80, 36],
        "sizes_from_shape": True}, "cpu", [("resize-linear-scales-measured", ["linear", "absent", 1.5])]),
    ("linear align_corners x2", {"mode": "linear", "coordinate_transformation_mode": "align_corners",
                                 "sizes": [1, 3, 80, 48]}, "cpu",
     [("resize-linear-not-align-corners", ["linear", "align_corners", "absent", [2.0, 2.0]])]),
]


# The wider ratios (segmentation heads and FPNs upsample by 4 and 8), by scales and by sizes, on the
# same x: H and W ratios in {1/8, 1/4, 1/3, 1/2, 1, 2, 3, 4, 5, 8} on the NPU; x6 was never measured.
NOT_MEASURED_X6 = [("resize-linear-scales-measured", ["linear", [6.0, 6.0], "absent"])]
RESIZE_RATIOS = [
    ("scales linear half_pixel x4", {"mode": "linear", "coordinate_transformation_mode": "half_pixel",
                                     "scale": 4.0}, "npu", []),
    ("scales linear asymmetric x8", {"mode": "linear", "coordinate_transformation_mode": "asymmetric",
                                     "scale": 8.0}, "npu", []),
    ("scales linear pytorch_half_pixel x0.25", {"mode": "linear", "coordinate_transformation_mode":
                                                "pytorch_half_pixel", "scale": 0.25}, "npu", []),
    ("scales nearest asymmetric x8", {"mode": "nearest", "coordinate_transformation_mode": "asymmetric",
                                      "scale": 8.0}, "npu", []),
    ("scales linear half_pixel x6", {"mode": "linear", "coordinate_transformation_mode": "half_pixel",
                                     "scale": 6.0}, "cpu", NOT_MEASURED_X6),
    ("scales linear half_pixel x1.25", {"mode": "linear", "coordinate_transformation_mode": "half_pixel",
                                        "scale": 1.25}, "cpu",
     [("resize-linear-scales-measured", ["linear", [1.25, 1.25], "absent"])]),
    ("scales linear align_corners x1", {"mode": "linear", "coordinate_transformation_mode": "align_corners",
                                        "scale": 1.0}, "npu", []),
    ("scales linear align_corners x4", {"mode": "linear", "coordinate_transformation_mode": "align_corners",
                                        "scale": 4.0}, "cpu",
     [("resize-linear-not-align-corners", ["linear", "align_corners", [4.0, 4.0], "absent"])]),
    ("sizes linear half_pixel x4", {"mode": "linear", "coordinate_transformation_mode": "half_pixel",
                                    "sizes": [1, 3, 160, 96]}, "npu", []),
    ("sizes linear half_pixel x8 from Shape", {"mode": "linear", "coordinate_transformation_mode": "half_pixel",
                                               "sizes": [1, 3, 320, 192], "sizes_from_shape": True}, "npu", []),
    ("sizes linear pytorch_half_pixel x0.25", {"mode": "linear", "coordinate_transformation_mode":
                                               "pytorch_half_pixel", "sizes": [1, 3, 10, 6]}, "npu", []),
    ("sizes linear half_pixel H x4, W x8", {"mode": "linear", "coordinate_transformation_mode": "half_pixel",
                                            "sizes": [1, 3, 160, 192]}, "npu", []),
    ("sizes linear align_corners identity", {"mode": "linear", "coordinate_transformation_mode": "align_corners",
                                             "sizes": [1, 3, 40, 24]}, "npu", []),
    ("sizes linear half_pixel x6", {"mode": "linear", "coordinate_transformation_mode": "half_pixel",
                                    "sizes": [1, 3, 240, 144]}, "cpu",
     [("resize-linear-scales-measured", ["linear", "absent", [6.0, 6.0]])]),
]


@pytest.mark.parametrize(("args", "placement", "failures"), [pytest.param(*case[1:], id=case[0])
                                                             for case in RESIZE_BY_SIZES + RESIZE_RATIOS])
def test_resize_under_rknn_rk3588(tmp_path: Path, args: dict[str, Any], placement: str,
                                  failures: list[tuple[str, Any]]) -> None:
    """The measured rule on torch-like Resize nodes: linear on the NPU only where the scales (or sizes
    / input dims) on H and W are ratios measured there, and not align_corners except as an identity;
    nearest everywhere (the resize-mode-coordinates-scales and resize-sizes families)."""
    from npu_gate.pipeline import inspect_model
    from tests.helpers.profile_builders import resize

    (tmp_path / "m.onnx").write_bytes(resize(x=[1, 3, 40, 24], **args).SerializeToString())
    result = inspect_model(tmp_path / "m.onnx", load_profile("rknn-rk3588"))
    assert {n.name: n.placement for n in result.nodes}["node0"] == placement
    found = [(f.constraint, f.actual) for f in result.findings if f.node == "node0" and f.rule == "op-constraint"]
    assert found == failures
    # the constraint, what failed, then the calibration's evidence
    # (every one has a constraint: found == failures)
    messages = {f.constraint: f.message for f in result.findings
                if f.node == "node0" and f.rule == "op-constraint" and f.constraint is not None}
    assert {c: (m.startswith(f"{c}: "), m.endswith(f"; {RESIZE_MESSAGES[c]}")) for c, m in messages.items()} == {
        c: (True, True) for c, _ in failures}


def test_a_calibrated_constraint_finding_says_which_condition_failed(tmp_path: Path) -> None:
    """Every Resize constraint of rknn-rk3588 used to give the same message: the calibration counts only."""
    from npu_gate.pipeline import inspect_model
    from tests.helpers.profile_builders import resize

    (tmp_path / "m.onnx").write_bytes(resize(mode="cubic").SerializeToString())
    result = inspect_model(tmp_path / "m.onnx", load_profile("rknn-rk3588"))
    assert [f.message for f in result.findings if f.rule == "op-constraint"] == [
        f"resize-mode-nearest-or-linear: attribute mode cubic not in {{nearest, linear}}; {MEASURED}"]


@pytest.mark.torch
def test_torch_upsampling_under_rknn_rk3588(tmp_path: Path) -> None:
    """F.interpolate as segmentation heads and FPNs write it, exported by TorchScript (scales as a
    Constant, size folded from Shape -> Slice -> Concat): x4, x8 and x0.25 bilinear run on the NPU,
    x6 (never measured) and align_corners x4 on CPU."""
    import warnings

    import torch

    from npu_gate.pipeline import inspect_model

    interpolate = torch.nn.functional.interpolate

    class Heads(torch.nn.Module):
        def forward(self, x: Any) -> tuple[Any, ...]:
            bilinear = [interpolate(x, scale_factor=s, mode="bilinear") for s in (4.0, 8.0, 0.25)]
            return (*bilinear, interpolate(x, size=(160, 96), mode="bilinear"),
                    interpolate(x, scale_factor=8.0, mode="nearest"), interpolate(x, scale_factor=6.0, mode="bilinear"),
                    interpolate(x, scale_factor=4.0, mode="bilinear", align_corners=True))

    path = tmp_path / "heads.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(Heads().eval(), (torch.rand(1, 3, 40, 24),), str(path), dynamo=False, opset_version=17)
    result = inspect_model(path, load_profile("rknn-rk3588"))
    resizes = [n for n in result.nodes if n.op_type == "Resize"]
    assert [(n.attributes["mode"], n.attributes["coordinate_transformation_mode"], n.placement) for n in resizes] == [
        ("linear", "half_pixel", "npu"), ("linear", "half_pixel", "npu"), ("linear", "half_pixel", "npu"),
        ("linear", "half_pixel", "npu"), ("nearest", "asymmetric", "npu"), ("linear", "half_pixel", "cpu"),
        ("linear", "align_corners", "cpu")]
    assert [(f.node, f.constraint, f.actual) for f in result.findings if f.rule == "op-constraint"] == [
        (resizes[5].name, "resize-linear-scales-measured", ["linear", [6.0, 6.0], "absent"]),
        (resizes[6].name, "resize-linear-not-align-corners", ["linear", "align_corners", [4.0, 4.0], "absent"])]


@pytest.mark.slow
def test_from_record_beside_out_rewrites_only_the_verdicts(run_cli: RunCli, tmp_path: Path) -> None:
    """The built-in is regenerated by the tool: the record's points stay, its verdicts are derived again."""
    record = _builtin_record()
    pad = record["verdicts"]["Pad"]
    before = {k: pad[k] for k in ("families", "points", "on_npu", "measured")} | {
        "verdict": "unexplained", "hypotheses": [], "contradicted_by": ["pad-ch-constant"], "notes": ["vocabulary"]}
    stale = {**record, "verdicts": {**record["verdicts"], "Pad": before}}  # Pad as derived before value tests
    path = tmp_path / "rknn-rk3588.calibration.json"
    path.write_text(record_json(stale), encoding="utf-8")
    run = run_cli("profile", "calibrate", "--target", "rk3588", "--out", tmp_path / "rknn-rk3588.json",
                  "--from-record", path)
    assert run.code == 0, run.err
    assert run.out.endswith(f"wrote {tmp_path / 'rknn-rk3588.json'} (65 ops, 7 patterns) and {path}\n")
    assert path.read_text(encoding="utf-8") == (profile_dir() / "rknn-rk3588.calibration.json").read_text(
        encoding="utf-8")
    # the same profile; its $schema is left out, the bundled schemas not being under the current folder
    builtin = json.loads((profile_dir() / "rknn-rk3588.json").read_text(encoding="utf-8"))
    assert builtin["$schema"] == "../../schemas/profile.schema.json"
    del builtin["$schema"]
    assert json.loads((tmp_path / "rknn-rk3588.json").read_text(encoding="utf-8")) == builtin


def test_without_value_tests_the_three_ops_stay_unexplained() -> None:
    """The same record and sweep with the value hypotheses removed: the verdicts of before."""
    from dataclasses import replace

    record = _builtin_record()
    families = [replace(f, constraints=[c for c in f.constraints
                                        if "value" not in json.dumps(c)]) for f in SWEEPS["standard"]()]
    _, derived = derive_profile(record, families)
    assert {op: derived.verdicts[op]["verdict"] for op in ("Resize", "Slice", "Pad")} == {
        "Resize": "unexplained", "Slice": "unexplained", "Pad": "unexplained"}
    # (resize-linear-not-align-corners has value alternatives too: without it align_corners points count)
    assert derived.verdicts["Resize"]["contradicted_by"] == [
        "resize-linear-half_pixel-x1.5", "resize-linear-asymmetric-x1.5", "resize-linear-align_corners-x2",
        "resize-linear-align_corners-x0.5", "resize-linear-align_corners-x3", "resize-linear-align_corners-x1.5",
        "resize-linear-pytorch_half_pixel-x1.5", "resize-linear-half_pixel-x1.25", "resize-linear-asymmetric-x1.25",
        "resize-sizes-linear-half_pixel-48x48", "resize-sizes-linear-half_pixel-20x20",
        "resize-sizes-linear-pytorch_half_pixel-48x48", "resize-sizes-linear-pytorch_half_pixel-20x20",
        "resize-sizes-linear-asymmetric-48x48", "resize-sizes-linear-align_corners-64x64",
        "resize-sizes-linear-align_corners-16x16", "resize-sizes-linear-half_pixel-64x48",
        "resize-sizes-linear-half_pixel-48x64", "resize-sizes-linear-half_pixel-40x40"]
    assert derived.verdicts["Pad"]["contradicted_by"] == ["pad-ch-constant"]


@pytest.mark.slow
def test_without_the_sizes_ratio_linear_resize_by_sizes_contradicts_the_scales_rule() -> None:
    """The hypothesis of before (scales only): the linear points by sizes that ran on the NPU, where
    input 2 is absent, are what it gets wrong; with ratio_to_input every point is predicted."""
    from dataclasses import replace

    def scales_only(c: dict[str, Any]) -> dict[str, Any]:
        if c["id"] != "resize-linear-scales-measured":
            return c
        return {**c, "any_of": [a for a in c["any_of"] if "ratio_to_input" not in json.dumps(a)]}

    families = [replace(f, constraints=[scales_only(c) for c in f.constraints]) for f in SWEEPS["standard"]()]
    _, derived = derive_profile(_builtin_record(), families)
    assert derived.verdicts["Resize"]["verdict"] == "unexplained"
    assert derived.verdicts["Resize"]["contradicted_by"] == [
        "resize-sizes-linear-half_pixel-64x64", "resize-sizes-linear-half_pixel-16x16",
        "resize-sizes-linear-half_pixel-96x96", "resize-sizes-linear-pytorch_half_pixel-64x64",
        "resize-sizes-linear-pytorch_half_pixel-16x16", "resize-sizes-linear-asymmetric-64x64",
        "resize-sizes-linear-half_pixel-64x16", "resize-sizes-linear-half_pixel-16x96",
        "resize-sizes-linear-half_pixel-64x64-from-shape", "resize-sizes-linear-half_pixel-128x128",
        "resize-sizes-linear-half_pixel-8x8", "resize-sizes-linear-half_pixel-256x256",
        "resize-sizes-linear-half_pixel-4x4", "resize-sizes-linear-half_pixel-160x160",
        "resize-sizes-linear-half_pixel-32x32", "resize-sizes-linear-half_pixel-16x16-from-48x48",
        "resize-sizes-linear-half_pixel-128x64", "resize-sizes-linear-asymmetric-128x128",
        "resize-sizes-linear-asymmetric-256x256", "resize-sizes-linear-pytorch_half_pixel-8x8",
        "resize-sizes-linear-align_corners-32x32"]


# --- profile diff ---------------------------------------------------------------------------

def test_profile_diff_of_the_calibrated_profile_against_its_base() -> None:
    d = diff_profiles(load_profile("rknn-toolkit2-v2.1"), load_profile("rknn-rk3588"))
    assert d["ops_added"] == ["Abs", "Neg"]
    assert d["ops_removed"] == ["ArgMax", "Cast", "Cos", "Equal", "Erf", "Exp", "Floor", "Greater", "LRN", "Less",
                                "Log", "LogSoftmax", "MeanVarianceNormalization", "Min", "Mish", "ReduceMax",
                                "ReduceMin", "Sin", "SpaceToDepth", "Tile"]
    assert [c["op"] for c in d["ops_constrained_differently"]] == [
        "Add", "AveragePool", "ConvTranspose", "Max", "Pad", "Pow", "Relu", "Reshape", "Resize", "Slice", "Softmax"]
    assert d["patterns_added"] == ["attention-matmul-div-softmax-matmul", "gelu-erf", "gelu-erf-half-first",
                                   "hardswish-add-clip-mul-div", "l1-normalize-reducel1-clip-expand-div",
                                   "l2-normalize-reducel2-clip-expand-div", "silu-sigmoid-mul"]
    assert d["rank_adapters"] is None and not d["identical"]


def test_profile_diff_cli(run_cli: RunCli, tmp_path: Path) -> None:
    same = run_cli("profile", "diff", "rknn-rk3588", "rknn-rk3588")
    assert same.code == 0
    assert same.out == ("profile diff: rknn-rk3588 (71 ops) -> rknn-rk3588 (71 ops)\n"
                        "  no difference in ops, constraints, patterns or rank adapters\n")
    run = run_cli("profile", "diff", "rknn-rk3588-fused", "rknn-rk3588", "--json", tmp_path / "d.json",
                  "--markdown", tmp_path / "d.md")
    assert run.code == 1
    assert "  ops rknn-rk3588 removes (2; rknn-rk3588-fused runs them on the NPU): Min, Tile\n" in run.out
    doc = json.loads((tmp_path / "d.json").read_text(encoding="utf-8"))
    assert doc["rank_adapters"] == {"a": {"rank": 4, "op": "Reshape", "npu_when": {"axis": -1, "multiple_of": 8}},
                                    "b": None}
    report = (tmp_path / "d.md").read_text(encoding="utf-8")
    assert report.startswith("# Profile diff: <code>rknn-rk3588-fused</code> → <code>rknn-rk3588</code>\n")
    assert "- ops <code>rknn-rk3588</code> removes (2; <code>rknn-rk3588-fused</code> runs them on the NPU): " \
           "<code>Min</code>, <code>Tile</code>\n" in report


def test_profile_diff_markdown_escapes_profile_text(tmp_path: Path) -> None:
    """A user's profile is text from outside: its names cannot open HTML or ping anyone."""
    from npu_gate.calibrate.diff import render_markdown

    d = {"a": {"name": "</details><img src=x>", "evidence": "@someone", "ops": 1},
         "b": {"name": "b", "evidence": "measured", "ops": 1}, "ops_added": ["#12"], "ops_removed": [],
         "ops_constrained_differently": [], "patterns_added": [], "patterns_removed": [], "rank_adapters": None}
    text = render_markdown(d)
    assert "<img" not in text and "@someone" not in text and "#12" not in text
    assert "<code>&#60;/details&#62;&#60;img src=x&#62;</code> (&#64;&#8288;someone, 1 ops)" in text
    assert "- ops <code>b</code> adds (1): <code>&#35;12</code>" in text


# --- end to end on the fake compiler --------------------------------------------------------

def test_calibrate_on_the_fake_compiler(run_cli: RunCli, tmp_path: Path) -> None:
    """The fake compiler runs Erf on CPU and every other op on the NPU, whatever its shape."""
    out = tmp_path / "fake-cal.json"
    run = run_cli("profile", "calibrate", "--compiler", "fake", "--target", "fake1", "--sweep", "tiny",
                  "--out", out, "--diff-against", "demo")
    assert run.code == 0, run.err
    assert "7 points in " in run.out and "(batch, median " in run.out and ", 1 compiler process(es))" in run.out
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert {op: e["constraints"] for op, e in doc["ops"].items()} == {"AveragePool": [], "Relu": [], "Transpose": []}
    record = json.loads((tmp_path / "fake-cal.calibration.json").read_text(encoding="utf-8"))
    assert [(p["point"], p["device"]) for p in record["points"]] == [
        ("transpose-1x2x8192x4", "npu"), ("transpose-1x2x8200x4", "npu"),
        ("averagepool-k3-s1-pad1-include0", "npu"), ("averagepool-k3-s1-pad1-include1", "npu"),
        ("averagepool-k3-s1-pad0-include0", "npu"), ("relu-1x16x32x32", "npu"), ("erf-1x16x32x32", "cpu")]
    assert record["verdicts"]["Erf"]["verdict"] == "cpu"
    assert record["compiler"] == {"name": "fake-compiler", "version": "0.1", "target": "fake1"}
    assert schema_problems(record, "calibration", "record") == []
    assert json.loads((tmp_path / "fake-cal.diff.json").read_text(encoding="utf-8"))["ops_added"] == [
        "AveragePool", "Relu", "Transpose"]
    assert (tmp_path / "fake-cal.diff.md").is_file()
    assert "$schema" not in doc  # the bundled schema is not under the current folder with tmp_path


def test_from_record_into_another_folder_writes_the_record_beside_the_profile(run_cli: RunCli, tmp_path: Path) -> None:
    """It wrote no record there, and the profile cited the record of the first folder; it also
    wanted --target and printed compile timings, though no compiler runs."""
    first = tmp_path / "fake-cal.json"
    assert run_cli("profile", "calibrate", "--compiler", "fake", "--target", "fake1", "--sweep", "tiny",
                   "--out", first).code == 0
    source = tmp_path / "fake-cal.calibration.json"
    other = tmp_path / "y" / "again.json"
    run = run_cli("profile", "calibrate", "--out", other, "--from-record", source)
    assert run.code == 0, run.err
    assert run.out == (f"derived from {source}: 7 points measured with fake-compiler 0.1 fake1; no compiler ran\n"
                       f"wrote {other} (3 ops, 0 patterns) and {tmp_path / 'y' / 'again.calibration.json'}\n")
    derived = json.loads(other.read_text(encoding="utf-8"))
    record = json.loads((tmp_path / "y" / "again.calibration.json").read_text(encoding="utf-8"))
    assert (derived["name"], record["name"], record["record_name"]) == ("again", "again", "again.calibration.json")
    assert record["points"] == json.loads(source.read_text(encoding="utf-8"))["points"]
    assert derived["ops"]["Relu"]["note"] == ("measured on the NPU at the one sweep point "
                                              "(relu; again.calibration.json#Relu)")
    assert "fake-cal.calibration.json" not in derived["description"] + derived["source"]
    wrong = run_cli("profile", "calibrate", "--target", "rk3588", "--out", other, "--from-record", source)
    assert (wrong.code, wrong.err) == (2, f"npu-gate: error: --target rk3588: {source} was measured for fake1\n")
    none = run_cli("profile", "calibrate", "--out", tmp_path / "z.json")
    assert none.code == 2
    assert none.err.startswith("npu-gate: error: --target: required to measure")


def test_schema_reference_is_relative_to_out_when_both_are_in_the_current_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import npu_gate.resources
    from npu_gate.calibrate import schema_reference

    (tmp_path / "checkout" / "schemas").mkdir(parents=True)
    monkeypatch.setattr(npu_gate.resources, "schema_dir", lambda: tmp_path / "checkout" / "schemas")
    monkeypatch.chdir(tmp_path / "checkout")
    assert schema_reference(Path("cal/p.json")) == "../schemas/profile.schema.json"
    assert schema_reference(Path("p.json")) == "schemas/profile.schema.json"
    assert schema_reference(tmp_path / "elsewhere" / "p.json") is None
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert schema_reference(Path("p.json")) is None  # the schema is not under the current folder


@pytest.mark.slow
def test_a_crash_and_a_hang_cost_their_point_and_the_sweep_goes_on(tmp_path: Path) -> None:
    """The fake driver crashes (SIGSEGV) on a node named crash_me and hangs on hang_me."""
    def relu_named(pid: str, name: str) -> Any:
        point = between(pid, "Relu", X)
        build = point.build

        def renamed() -> Any:
            m = build()
            m.graph.node[1].name = name
            return m
        return type(point)(pid, renamed, node=name)

    families = [Family("relus", "Relu", [relu_named("first", "relu"), relu_named("crash", "crash_me"),
                                         relu_named("after-crash", "relu"), relu_named("hang", "hang_me"),
                                         relu_named("after-hang", "relu")])]
    seen: list[str] = []
    record = measure(FakeCompiler(), "fake1", Path(sys.executable), families, timeout=2, keep=tmp_path / "work",
                     progress=lambda p: seen.append(p["point"]))
    assert seen == ["first", "crash", "after-crash", "hang", "after-hang"]
    assert [(p["point"], p["status"], p["device"]) for p in record["points"]] == [
        ("first", "ok", "npu"), ("crash", "crashed", None), ("after-crash", "ok", "npu"), ("hang", "crashed", None),
        ("after-hang", "ok", "npu")]
    crash, hang = record["points"][1], record["points"][3]
    assert crash["error"] == "the compiler process was killed by SIGSEGV (stage: build)"
    assert crash["log_tail"] == ["I fake-compiler version: 0.1", " 100%", "fatal: about to crash"]
    assert hang["error"] == "timed out after 2 s (stage: load)"
    assert record["timings"]["processes"] == 3 and record["timings"]["mode"] == "batch"
    doc = record_document(record, name="relus", record_name="relus.calibration.json", sweep="tiny",
                          command="npu-gate profile calibrate --sweep tiny", extends=None, patterns_from=None,
                          candidates=candidates_from(None))
    assert schema_problems({**doc, "verdicts": {}}, "calibration", "record") == []  # crashed points included
    responses = [json.loads((tmp_path / "work" / "points" / p / "attempt-1" / "response.json").read_text())
                 for p in ("first", "after-crash", "after-hang")]
    assert len({r["pid"] for r in responses}) == 3  # a new child after the crash and after the hang
    for name in ("first", "after-crash"):
        log = (tmp_path / "work" / "points" / name / "attempt-1" / "compiler.log").read_text()
        rows = [line for line in log.splitlines() if line.startswith("ROW")]
        assert rows == ["ROW 0 Relu NPU before", "ROW 1 Relu NPU relu", "ROW 2 Relu NPU after"]  # its own slice


def test_one_process_per_point_when_asked(tmp_path: Path) -> None:
    families = SWEEPS["tiny"]()[2:]
    batch = measure(FakeCompiler(), "fake1", Path(sys.executable), families)
    single_ = measure(FakeCompiler(), "fake1", Path(sys.executable), families, batch=False)
    expected = [("relu-1x16x32x32", "npu"), ("erf-1x16x32x32", "cpu")]
    assert [(p["point"], p["device"]) for p in batch["points"]] == expected
    assert [(p["point"], p["device"]) for p in single_["points"]] == expected
    assert (batch["timings"]["processes"], single_["timings"]["processes"]) == (1, 2)
    assert single_["timings"]["mode"] == "process per point"


# --- the record's schema (schemas/calibration.schema.json) ----------------------------------

def _builtin_record() -> dict[str, Any]:
    record: dict[str, Any] = json.loads((profile_dir() / "rknn-rk3588.calibration.json").read_text(encoding="utf-8"))
    return record


def test_the_builtin_record_matches_the_schema() -> None:
    """Every kind of point (op, pattern, adapter, crashed, failed) and of verdict is in it."""
    record = _builtin_record()
    assert schema_problems(record, "calibration", "record") == []
    assert {p["status"] for p in record["points"]} == set(STATUSES)
    assert {v["verdict"] for v in record["verdicts"].values()} == {
        "npu", "cpu", "constrained", "unexplained", "confirmed", "contradicted"}


def test_the_schema_enums_are_the_writers() -> None:
    defs = load_schema("calibration")["$defs"]
    assert defs["point"]["properties"]["status"]["enum"] == list(STATUSES)
    assert defs["actual"]["enum"] == [*ACTUALS, None]
    assert load_schema("calibration")["properties"]["sweep"]["enum"] == list(SWEEPS)


def test_a_broken_record_fails_with_json_paths() -> None:
    record = _builtin_record()
    record["points"][0]["status"] = "skipped"
    del record["points"][1]["device"]
    pattern_point = next(p for p in record["points"] if p["family"] == "pattern-silu")
    pattern_point["device"] = "npu"
    record["points"][2]["error"] = "boom"  # without its log_tail
    record["candidates"]["patterns"][0]["becomes"] = "Hard Swish"  # checked as a profile pattern
    record["verdicts"]["Transpose"]["verdict"] = "constrained"  # without its constraints
    record["verdicts"]["rank_adapters"]["points"][0][1]["measured"] = ["gpu"]
    record["timings"]["mode"] = "threads"
    record["notes"] = "hand-edited"
    i = record["points"].index(pattern_point)
    assert schema_problems(record, "calibration", "r.json") == [
        "r.json: (root): Additional properties are not allowed ('notes' was unexpected)",
        "r.json: candidates.patterns[0].becomes: 'Hard Swish' does not match '^[A-Za-z][A-Za-z0-9_]*$'",
        "r.json: points[0].status: 'skipped' is not one of ['ok', 'failed', 'crashed']",
        "r.json: points[1]: 'device' is a required property",
        "r.json: points[2]: 'log_tail' is a dependency of 'error'",
        f"r.json: points[{i}].device: 'npu' should not be valid under {{}}",
        "r.json: timings.mode: 'threads' is not one of ['batch', 'process per point']",
        "r.json: verdicts.Transpose: 'constraints' is a required property",
        "r.json: verdicts.rank_adapters.points[0][1].measured[0]: 'gpu' is not one of ['npu', 'cpu']",
    ]


def test_from_record_reports_a_broken_record_in_one_line_per_problem(run_cli: RunCli, tmp_path: Path) -> None:
    record = _builtin_record()
    record["points"][3]["seconds"] = -1
    del record["compiler"]["version"]
    path = tmp_path / "bad.calibration.json"
    path.write_text(json.dumps(record), encoding="utf-8")
    run = run_cli("profile", "calibrate", "--target", "rk3588", "--out", tmp_path / "p.json", "--from-record", path)
    assert run.code == 2
    assert run.err == (f"npu-gate: error: {path}: compiler: 'version' is a required property\n"
                       f"npu-gate: error: {path}: points[3].seconds: -1 is less than the minimum of 0\n")
    assert not (tmp_path / "p.json").exists()


def test_from_record_refuses_a_record_of_another_sweep_unreadable_or_missing(run_cli: RunCli, tmp_path: Path) -> None:
    record = _builtin_record()
    del record["points"][:2]
    path = tmp_path / "old.calibration.json"
    path.write_text(json.dumps(record), encoding="utf-8")
    args = ["profile", "calibrate", "--target", "rk3588", "--out", tmp_path / "p.json", "--from-record"]
    run = run_cli(*args, path)
    assert (run.code, run.err) == (2, f"npu-gate: error: {path}: points: no measurement for 2 point(s) of the "
                                      f"standard-int8 sweep, e.g. conv-k1: the record was made with another sweep\n")
    path.write_text("{", encoding="utf-8")
    run = run_cli(*args, path)
    assert (run.code, run.err) == (2, f"npu-gate: error: {path}:1:2: invalid JSON: Expecting property name "
                                      f"enclosed in double quotes\n")
    run = run_cli(*args, tmp_path / "none.json")
    assert (run.code, run.err) == (2, f"npu-gate: error: {tmp_path / 'none.json'}: file not found\n")


# --- on the real compiler -------------------------------------------------------------------

# absolute: a contract resolves a relative venv from its own folder
RKNN_VENV = Path(os.environ.get("NPU_GATE_RKNN_VENV", REPO / ".venv-rknn")).absolute()


@pytest.mark.rknn
def test_calibrate_with_rknn_toolkit2(run_cli: RunCli, tmp_path: Path) -> None:
    if not (RKNN_VENV / "npu-gate-probe.json").exists():
        pytest.skip(f"no RKNN-Toolkit2 venv at {RKNN_VENV}: create it with `npu-gate probe setup rknn {RKNN_VENV}`")
    out = tmp_path / "rknn-rk3588-calibrated.json"
    run = run_cli("profile", "calibrate", "--compiler", "rknn", "--target", "rk3588", "--venv", RKNN_VENV,
                  "--sweep", "tiny", "--out", out, "--extends", "rknn-toolkit2-v2.1")
    assert run.code == 0, run.err
    assert ", 1 compiler process(es))" in run.out  # all seven points in one batch child
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["evidence"] == "measured" and doc["extends"] == "rknn-toolkit2-v2.1"
    ops = {op: (None if e is None else [c["id"] for c in e["constraints"]]) for op, e in doc["ops"].items()}
    assert ops == {"AveragePool": ["averagepool-pads-count-include-pad"], "Erf": None, "Relu": [],
                   "Transpose": ["transpose-dim2-max-8192"]}
    record = json.loads((tmp_path / "rknn-rk3588-calibrated.calibration.json").read_text(encoding="utf-8"))
    assert record["compiler"]["version"] == "2.5.0"
    assert [(p["point"], p["device"]) for p in record["points"]] == [
        ("transpose-1x2x8192x4", "npu"), ("transpose-1x2x8200x4", "cpu"),
        ("averagepool-k3-s1-pad1-include0", "cpu"), ("averagepool-k3-s1-pad1-include1", "npu"),
        ("averagepool-k3-s1-pad0-include0", "npu"), ("relu-1x16x32x32", "npu"), ("erf-1x16x32x32", "cpu")]
    load_profile(str(out))


@pytest.mark.rknn
def test_the_cleanup_families_measured_again_give_the_records_points(tmp_path: Path) -> None:
    """The compiler facts behind rknn-rk3588's eliminates and lowers (#20), measured again."""
    if not (RKNN_VENV / "npu-gate-probe.json").exists():
        pytest.skip(f"no RKNN-Toolkit2 venv at {RKNN_VENV}: create it with `npu-gate probe setup rknn {RKNN_VENV}`")
    from npu_gate.calibrate.sweeps import cleanup_families, folding_families
    from npu_gate.probe import get_compiler

    compiler = get_compiler("rknn")
    folding = folding_families()  # standard-int8's: the Mul into-conv family extended in place
    families = [*(f for f in cleanup_families() if f.id not in {g.id for g in folding}), *folding,
                *(f for f in SWEEPS["standard"]() if f.id == "slice-axis0")]
    measured = measure(compiler, "rk3588", compiler.python(RKNN_VENV), families)
    checked_in = {p["point"]: p for p in _builtin_record()["points"]}

    def facts(p: dict[str, Any]) -> Any:
        return p["status"], p.get("device"), p.get("nodes")

    assert {p["point"]: facts(p) for p in measured["points"]} == \
        {p.id: facts(checked_in[p.id]) for f in families for p in f.points}


def test_a_diff_against_typo_fails_before_the_sweep(run_cli: RunCli, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """It used to run the whole sweep and write the profile, then exit 2."""
    import npu_gate.calibrate

    def no_sweep(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the sweep ran")

    monkeypatch.setattr(npu_gate.calibrate, "measure", no_sweep)
    run = run_cli("profile", "calibrate", "--compiler", "fake", "--target", "fake1", "--sweep", "tiny",
                  "--out", tmp_path / "x" / "a.json", "--diff-against", "nosuch")
    assert run.code == 2
    assert run.err.startswith("npu-gate: error: --diff-against: unknown profile 'nosuch'")
    assert run.out == ""
    assert list(tmp_path.iterdir()) == []


def test_profile_diff_of_a_calibration_record_says_what_it_is(run_cli: RunCli, tmp_path: Path) -> None:
    """It used to print six schema errors ending with `extends: None is not of type 'string'`."""
    record = profile_dir() / "rknn-rk3588.calibration.json"
    run = run_cli("profile", "diff", record, "rknn-rk3588")
    assert run.code == 2
    profile = profile_dir() / "rknn-rk3588.json"
    assert run.err == (f"npu-gate: error: {record}: this is a calibration record (written by npu-gate profile "
                       f"calibrate), not a profile; the profile derived from it is {profile}\n")
    alone = tmp_path / "r.json"
    shutil.copy(record, alone)
    run = run_cli("profile", "diff", "rknn-rk3588", alone)
    assert (run.code, run.err) == (2, f"npu-gate: error: {alone}: this is a calibration record (written by "
                                      "npu-gate profile calibrate), not a profile\n")


def test_profile_check_of_a_calibration_record_says_what_it_is(run_cli: RunCli, tmp_path: Path) -> None:
    """It used to print five schema errors (`'description' is a required property`, ...)."""
    record = profile_dir() / "rknn-rk3588.calibration.json"
    run = run_cli("profile", "check", record)
    assert (run.code, run.out) == (1, f"{record}: 1 error(s)\n")
    profile = profile_dir() / "rknn-rk3588.json"
    assert run.err == (f"npu-gate: error: {record}: this is a calibration record (written by npu-gate profile "
                       f"calibrate), not a profile; the profile derived from it is {profile}\n")
    alone = tmp_path / "r.json"
    shutil.copy(record, alone)
    run = run_cli("profile", "check", alone)
    assert (run.code, run.err) == (1, f"npu-gate: error: {alone}: this is a calibration record (written by "
                                      "npu-gate profile calibrate), not a profile\n")


def test_profile_diff_says_not_measured_for_ops_a_calibration_without_a_base_never_measured(
        run_cli: RunCli, tmp_path: Path) -> None:
    """Erf was measured off the NPU (removed); Add was never in the sweep: it used to be "removed" too."""
    out = tmp_path / "cal.json"
    assert run_cli("profile", "calibrate", "--compiler", "fake", "--target", "fake1", "--sweep", "tiny",
                   "--out", out).code == 0
    a = tmp_path / "a.json"
    a.write_text(json.dumps({"name": "a", "description": "d", "source": "s", "evidence": "illustrative",
                             "ops": {"Add": {}, "Erf": {}, "Relu": {}}}), encoding="utf-8")
    run = run_cli("profile", "diff", a, out, "--json", tmp_path / "d.json")
    assert run.code == 1
    assert run.out == ("profile diff: a (3 ops) -> cal (3 ops)\n"
                       "  ops cal adds (2): AveragePool, Transpose\n"
                       "  ops cal removes (1; a runs them on the NPU): Erf\n"
                       "  ops not in cal, not measured by its calibration (1; a runs them on the NPU): Add\n")
    doc = json.loads((tmp_path / "d.json").read_text(encoding="utf-8"))
    assert (doc["ops_removed"], doc["ops_not_measured"]) == (["Erf"], ["Add"])
    (tmp_path / "cal.calibration.json").unlink()  # without its record, what was measured is not known
    assert "  ops cal removes (2; a runs them on the NPU): Add, Erf\n" in run_cli("profile", "diff", a, out).out


@pytest.mark.parametrize("value", ["0", "-1", "soon"])
def test_calibrate_timeout_must_be_a_positive_number(run_cli: RunCli, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str], value: str) -> None:
    with pytest.raises(SystemExit) as stopped:
        run_cli("profile", "calibrate", "--compiler", "fake", "--target", "fake1", "--sweep", "tiny",
                "--out", tmp_path / "a.json", "--timeout", value)
    assert stopped.value.code == 2
    assert f"argument --timeout: {value!r} is not a positive number of seconds" in capsys.readouterr().err
    assert not (tmp_path / "a.json").exists()


@pytest.mark.rknn
def test_reshape_points_on_rknn_toolkit2_are_the_record_s(tmp_path: Path) -> None:
    """The 95 Reshape points built again on the real compiler place the measured node as the
    checked-in record says (the shuffle triplet's Reshapes folded, [1,576] and [1,2,8,2,2] on CPU,
    issue 20's real-model heads such as [1,82,10,10] -> [82,1,1,100] on CPU)."""
    if not (RKNN_VENV / "npu-gate-probe.json").exists():
        pytest.skip(f"no RKNN-Toolkit2 venv at {RKNN_VENV}: create it with `npu-gate probe setup rknn {RKNN_VENV}`")
    from npu_gate.calibrate.sweeps import reshape_families
    from npu_gate.probe import get_compiler

    compiler = get_compiler("rknn")
    measured = measure(compiler, "rk3588", compiler.python(RKNN_VENV), reshape_families(), keep=tmp_path)
    got = [[p["point"], p["device"]] for p in measured["points"]]
    assert got == _builtin_record()["verdicts"]["Reshape"]["measured"]
    assert sum(device == "npu" for _, device in got) == 53


@pytest.mark.parametrize("text", ["[" * 100_000 + "]" * 100_000, '{"verdicts": {"Conv": NaN}}',
                                  '{"verdicts": ' + "9" * 5000 + "}"])
def test_a_broken_record_beside_a_profile_is_no_record(run_cli: RunCli, tmp_path: Path, text: str) -> None:
    """`profile diff` reads the calibration record beside a measured profile (which ops it
    measured) with the strict reader: a record 100,000 deep, with NaN or a 5,000-digit number is no
    record (the diff says nothing of measured ops), not an internal error."""
    profile = tmp_path / "m.json"
    profile.write_text(json.dumps({"name": "m", "description": "d", "source": "s", "evidence": "measured",
                                   "ops": {"Conv": {}}}), encoding="utf-8")
    (tmp_path / "m.calibration.json").write_text(text, encoding="utf-8")
    run = run_cli("profile", "diff", "demo", profile)
    assert (run.code, run.err) == (1, "")
    assert run.out.startswith("profile diff: demo (5 ops) -> m (1 ops)\n")


# --- int8 builds (#21): the standard-int8 sweep behind rknn-rk3588 ---------------------------

def test_int8_sweep_refused_for_a_plugin_that_builds_no_int8(run_cli: RunCli, tmp_path: Path) -> None:
    run = run_cli("profile", "calibrate", "--compiler", "fake", "--target", "fake1", "--sweep", "standard-int8",
                  "--out", tmp_path / "x.json")
    assert run.code == 2
    assert run.err.strip().splitlines() == [
        "npu-gate: error: --sweep standard-int8: its points build with --quantize int8: the fake plug-in builds "
        "none only"]
    assert not (tmp_path / "x.json").exists()


def test_builtin_record_measured_the_lessons_ops_in_int8_on_the_npu() -> None:
    record = json.loads((profile_dir() / "rknn-rk3588.calibration.json").read_text(encoding="utf-8"))
    assert record["sweep"] == "standard-int8"
    quantized = {p["point"]: (p["family"], p["device"], p.get("became")) for p in record["points"] if "quantize" in p}
    assert quantized == {
        "add-tensor-quantized-int8": ("add-dtypes", "npu", None),
        "add-scalar-quantized-int8": ("add-dtypes", "npu", None),
        "conv-k3-quantized-int8": ("conv-int8", "npu", None), "clip-0-6-quantized-int8": ("clip-int8", "npu", None),
        "mul-tensor-quantized-int8": ("mul-int8", "npu", None), "div-scalar-quantized-int8": ("div-int8", "npu", "Mul"),
        "relu-1x16x32x32-quantized-int8": ("relu-int8", "npu", None)}
    # the standard sweep itself is unchanged; qnn-htp-fp16's record is the standard sweep's and the
    # Einsum equations' (#22)
    assert json.loads((profile_dir() / "qnn-htp-fp16.calibration.json").read_text(encoding="utf-8"))["sweep"] == \
        "standard-einsum"


def test_a_quantized_point_is_placed_in_its_qdq_form() -> None:
    """A quantized point is placed as onnxruntime's QDQ model, whose Add unit reads uint8: a
    hypothesis without uint8 predicts CPU where the int8 build ran on the NPU (unexplained), one
    with uint8 predicts every point (constrained)."""
    from npu_gate.calibrate.sweeps import quantized

    add = single("add-tensor", "Add", {"x": ("float32", X), "x2": ("float32", X)}, None, ["x2"])
    int64 = single("add-tensor-int64", "Add", {"x": ("int64", X), "x2": ("int64", X)}, None, ["x2"])
    devices = {"add-tensor-quantized-int8": "npu", "add-tensor-int64": "cpu"}
    float_only: dict[str, Any] = {"id": "add-input-dtype", "input": 0, "dtype": ["float32", "float16", "int8", "int32"]}
    for dtypes, verdict in ((float_only["dtype"], "unexplained"), ([*float_only["dtype"], "uint8"], "constrained")):
        family = Family("add-dtypes", "Add", [quantized(add), int64], [{**float_only, "dtype": dtypes}])
        assert derive(_record([family], devices), [family]).verdicts["Add"]["verdict"] == verdict


# --- the QDQ sweep and qnn-htp-qdq ----------------------------------------------------------

def test_the_qdq_sweep_quantizes_each_op_for_the_htp_in_8_and_16_bit() -> None:
    families = {f.id: f for f in SWEEPS["qdq"]()}
    assert sum(len(f.points) for f in families.values()) == 177  # 111 + 66 Einsum points (#22)
    low, high = families["qdq-reducelogsumexp-8bit"], families["qdq-reducelogsumexp-16bit"]
    assert [p.id for p in low.points + high.points] == [
        "reducelogsumexp-axes-2-3-float", "reducelogsumexp-axes-2-3-qdq-uint8", "reducelogsumexp-axes-2-3-qdq-uint16"]
    zero_points = {}
    for point in (low.points[1], high.points[0]):
        m = point.build()
        ops = [(n.op_type, n.domain) for n in m.graph.node if n.op_type != "Constant"]
        assert ("ReduceLogSumExp", "") in ops and sum(op == "QuantizeLinear" for op, _ in ops) == 2
        zero_points[point.id] = {t.data_type for t in m.graph.initializer if t.name.endswith("zero_point")}
    assert zero_points == {"reducelogsumexp-axes-2-3-qdq-uint8": {onnx.TensorProto.UINT8},
                           "reducelogsumexp-axes-2-3-qdq-uint16": {onnx.TensorProto.UINT16}}


@NEEDS_QNN_QUANTIZER
@pytest.mark.slow
def test_the_builtin_qnn_htp_qdq_profile_is_what_its_record_derives() -> None:
    record = json.loads((profile_dir() / "qnn-htp-qdq.calibration.json").read_text(encoding="utf-8"))
    profile = json.loads((profile_dir() / "qnn-htp-qdq.json").read_text(encoding="utf-8"))
    doc, derived = derive_profile(record)
    assert doc == profile, "regenerate: the command in the profile's source"
    assert derived.verdicts == record["verdicts"]
    assert record["compiler"] == {"name": "onnxruntime-qnn", "version": "2.7.0", "target": "htp"}
    verdicts = {k: v["verdict"] for k, v in record["verdicts"].items()}
    assert {k: v for k, v in verdicts.items() if v != "npu"} == {
        "Einsum": "constrained", "Erf": "cpu", "InstanceNormalization": "constrained",
        "LayerNormalization": "constrained", "ReduceL1": "cpu", "ReduceLogSum": "cpu", "ReduceLogSumExp": "constrained",
        "ReduceProd": "cpu", "ReduceSumSquare": "cpu"}
    assert record["verdicts"]["ReduceLogSumExp"]["constraints"] == ["reducelogsumexp-not-16-bit",
                                                                    "reducelogsumexp-not-8-bit"]
    assert record["verdicts"]["LayerNormalization"]["constraints"] == ["layernormalization-not-8-bit"]
    failed = [p["point"] for p in record["points"] if p["status"] != "ok"]
    assert failed == ["instancenormalization-qdq-uint16"]


# --- Einsum equations (#22): standard-einsum behind qnn-htp-fp16, their QDQ points in qdq ----------

# the equations the HTP took (onnxruntime-qnn 2.7.0, soc 57), per precision; the others went to CPU
EINSUM_ON_HTP = {
    "fp16": {"attention-scores", "attention-values", "attention-scores-spaced", "attention-scores-3d", "matmul",
             "matmul-batched", "logits-transposed", "sam-rel-h", "sam-rel-w", "transpose-all"},
    "uint8": {"attention-scores", "attention-values", "attention-scores-spaced", "attention-scores-3d", "matmul",
              "matmul-batched", "logits-transposed", "sam-rel-h", "transpose-all"},
    "uint16": set(),
}


def test_the_einsum_equations_are_a_sweep_of_their_own() -> None:
    """standard is unchanged (rknn-rk3588's record derives); standard-einsum adds 22 equations."""
    from npu_gate.calibrate.sweeps import EINSUM_POINTS

    einsum = [f for f in SWEEPS["standard-einsum"]() if f.op == "Einsum"]
    assert [f.id for f in einsum] == ["einsum-equations"]
    assert sum(len(f.points) for f in SWEEPS["standard-einsum"]()) == 372 + 22
    assert not any(f.op == "Einsum" for f in SWEEPS["standard"]())
    assert len(EINSUM_POINTS) == 22 and len({e for _, e, _, _ in EINSUM_POINTS}) == 22
    point = next(p for p in einsum[0].points if p.id == "einsum-linear-weight")
    m = point.build()
    assert [(n.op_type, list(n.input)) for n in m.graph.node] == [("Einsum", ["x", "w1"])]
    assert [i.name for i in m.graph.input] == ["x"] and [t.name for t in m.graph.initializer] == ["w1"]


def test_the_builtin_qnn_htp_fp16_profile_is_what_its_record_derives() -> None:
    text = (profile_dir() / "qnn-htp-fp16.calibration.json").read_text(encoding="utf-8")
    record = json.loads(text)
    doc, derived = derive_profile(record)
    assert doc == json.loads((profile_dir() / "qnn-htp-fp16.json").read_text(encoding="utf-8")), \
        "regenerate: the command in the profile's source"
    assert derived.verdicts == record["verdicts"]
    assert record_json(record) == text
    assert record["command"] in load_profile("qnn-htp-fp16").source
    einsum = {p["point"].removeprefix("einsum-"): p["device"] for p in record["points"]
              if p["family"] == "einsum-equations"}
    assert {k for k, v in einsum.items() if v == "npu"} == EINSUM_ON_HTP["fp16"]
    assert len(einsum) == 22 and set(einsum.values()) == {"npu", "cpu"}
    assert record["verdicts"]["Einsum"]["verdict"] == "constrained"
    assert record["verdicts"]["Einsum"]["constraints"] == ["einsum-equation-forms"]


def test_the_qdq_record_measured_einsum_at_both_widths() -> None:
    record = json.loads((profile_dir() / "qnn-htp-qdq.calibration.json").read_text(encoding="utf-8"))
    on_htp: dict[str, set[str]] = {"fp16": set(), "uint8": set(), "uint16": set()}
    for p in record["points"]:
        if p["family"].startswith("qdq-einsum-") and p["device"] == "npu":
            name, _, width = p["point"].removeprefix("einsum-").rpartition("-")
            on_htp["fp16" if width == "float" else width].add(name.removesuffix("-qdq"))
    assert on_htp == EINSUM_ON_HTP
    assert record["verdicts"]["Einsum"]["constraints"] == ["einsum-equation-forms", "einsum-equation-forms-8-bit",
                                                           "einsum-not-16-bit"]


def _einsum_model(tmp_path: Path, equation: str, shapes: list[list[int]], mode: str | None = None) -> Path:
    from npu_gate.calibrate.qdq_sweeps import quantized
    from npu_gate.calibrate.sweeps import einsum_point

    point = einsum_point("e", equation, shapes)
    path = tmp_path / f"{len(list(tmp_path.iterdir()))}.onnx"
    path.write_bytes((quantized(point.build, mode) if mode else point.build()).SerializeToString())
    return path


@pytest.mark.parametrize(("equation", "shapes", "placement", "failed"), [
    # letters and spacing the sweep did not use: the forms, not the strings, decide
    ("bnid,bnjd->bnij", [[1, 2, 8, 16], [1, 2, 8, 16]], "npu", []),
    ("  z y i d , z y d j -> z y i j ", [[1, 2, 8, 16], [1, 2, 16, 8]], "npu", []),
    ("ab,bc->ac", [[8, 16], [16, 4]], "npu", []),
    ("bhwc,wkc->bhwk", [[1, 4, 4, 16], [4, 4, 16]], "npu", []),
    ("bnc,ck->bnk", [[1, 8, 16], [16, 4]], "cpu", ["einsum-equation-forms"]),
    ("bhnd,bhne->bhde", [[1, 2, 8, 16], [1, 2, 8, 16]], "cpu", ["einsum-equation-forms"]),
    ("...ij,...jk->...ik", [[2, 8, 16], [2, 16, 4]], "cpu", ["einsum-equation-forms"]),
    ("i,j->ij", [[8], [4]], "cpu", ["einsum-equation-forms"]),
])
def test_einsum_under_qnn_htp_fp16(tmp_path: Path, equation: str, shapes: list[list[int]], placement: str,
                                   failed: list[str]) -> None:
    from npu_gate.pipeline import inspect_model

    result = inspect_model(_einsum_model(tmp_path, equation, shapes), load_profile("qnn-htp-fp16"))
    assert {n.name: n.placement for n in result.nodes}["einsum"] == placement
    assert [f.constraint for f in result.findings if f.node == "einsum" and f.rule == "op-constraint"] == failed


@NEEDS_QNN_QUANTIZER
@pytest.mark.parametrize(("equation", "shapes", "mode", "placements", "failed"), [
    ("bhqd,bhkd->bhqk", [[1, 2, 8, 16], [1, 2, 8, 16]], "int8", ("npu", "npu"), []),
    ("bhwc,wkc->bhwk", [[1, 4, 4, 16], [4, 4, 16]], "int8", ("cpu", "npu"),
     [("quantized-op-unsupported", "einsum-equation-forms-8-bit")]),
    ("bhqd,bhkd->bhqk", [[1, 2, 8, 16], [1, 2, 8, 16]], "int16", ("cpu", "npu"),
     [("quantized-op-unsupported", "einsum-not-16-bit")]),
    # refused in float as well: plain constraint findings, not a quantized-only refusal
    ("bqc,bchw->bqhw", [[1, 10, 16], [1, 16, 8, 8]], "int8", ("cpu", "cpu"),
     [("op-constraint", "einsum-equation-forms"), ("op-constraint", "einsum-equation-forms-8-bit")]),
])
def test_quantized_einsum_under_qnn_htp_qdq(tmp_path: Path, equation: str, shapes: list[list[int]], mode: str,
                                           placements: tuple[str, str], failed: list[tuple[str, str]]) -> None:
    """The QDQ unit of an Einsum under qnn-htp-qdq (the qdq sweep's rule) and under qnn-htp-fp16 (the
    float rule only: it knows nothing of the quantized refusals)."""
    from npu_gate.pipeline import inspect_model

    path = _einsum_model(tmp_path, equation, shapes, mode)
    results = {name: inspect_model(path, load_profile(name)) for name in ("qnn-htp-qdq", "qnn-htp-fp16")}
    assert tuple({n.name: n.placement for n in r.nodes}["einsum"] for r in results.values()) == placements
    assert [(f.rule, f.constraint) for f in results["qnn-htp-qdq"].findings if f.node == "einsum"] == failed


QNN_VENV = Path(os.environ.get("NPU_GATE_QNN_VENV", REPO / ".venv-qnn")).absolute()


@pytest.mark.qnn
@NEEDS_QNN_QUANTIZER
def test_the_einsum_points_measured_again_give_the_records_placements() -> None:
    """The 22 equations in fp16 and their 66 QDQ points, measured again with onnxruntime-qnn (#22)."""
    from npu_gate.calibrate.qdq_sweeps import einsum_families
    from npu_gate.calibrate.sweeps import einsum_family
    from npu_gate.probe import get_compiler
    from tests.helpers.common import probe_venv

    compiler = get_compiler("qnn")
    python = compiler.python(probe_venv(QNN_VENV, "qnn", "onnxruntime-qnn"))
    for record_name, families in (("qnn-htp-fp16", [einsum_family()]), ("qnn-htp-qdq", einsum_families())):
        checked_in = {p["point"]: p for p in json.loads(
            (profile_dir() / f"{record_name}.calibration.json").read_text(encoding="utf-8"))["points"]}
        measured = measure(compiler, "htp", python, families)
        assert {p["point"]: (p["status"], p["device"]) for p in measured["points"]} == \
            {p.id: (checked_in[p.id]["status"], checked_in[p.id]["device"]) for f in families for p in f.points}

"""`npu-gate profile calibrate`: inference from measured sweep points (offline), the whole
path on the fake compiler, and on the real RKNN-Toolkit2 (marked `rknn`)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from npu_gate.calibrate import (
    TINY,
    Calibration,
    Family,
    Measured,
    calibrate,
    hypothesis_placements,
    infer,
    profile_document,
    record_document,
)
from npu_gate.probe.fake import FakeCompiler
from npu_gate.profile import load_profile

FAMILIES = {f.op: f for f in TINY}


def _measured(family: Family, devices: list[str]) -> list[Measured]:
    return [Measured(p.id, family.op, d) for p, d in zip(family.points, devices, strict=True)]


def _predicted(family: Family) -> dict[str, str]:
    return hypothesis_placements(family, {p.id: p.build() for p in family.points})


def test_hypotheses_place_the_sweep_points() -> None:
    assert _predicted(FAMILIES["Transpose"]) == {"transpose-1x2x8192x4": "npu", "transpose-1x2x8200x4": "cpu"}
    assert _predicted(FAMILIES["AveragePool"]) == {"averagepool-k3-pad1-include0": "cpu",
                                                   "averagepool-k3-pad1-include1": "npu",
                                                   "averagepool-k3-pad0-include0": "npu"}


def test_a_hypothesis_that_predicts_every_point_is_kept_citing_them() -> None:
    family = FAMILIES["AveragePool"]
    entry, explained = infer(family, _measured(family, ["cpu", "npu", "npu"]), _predicted(family))
    assert explained and entry is not None
    [constraint] = entry["constraints"]
    assert constraint["id"] == "averagepool-pads-count-include-pad"
    assert constraint["message"] == ("AveragePool on CPU here; calibrated on: averagepool-k3-pad1-include0 (cpu), "
                                     "averagepool-k3-pad1-include1 (npu), averagepool-k3-pad0-include0 (npu)")


@pytest.mark.parametrize(("devices", "explained"), [
    (["npu", "cpu", "cpu"], False),  # contradicts the hypothesis: nothing is written
    (["npu", "npu", "npu"], True),   # no condition seen: the op without constraints
    (["cpu", "cpu", "split"], True),  # never on the NPU: left out
])
def test_what_is_claimed_from_the_points(devices: list[str], explained: bool) -> None:
    family = FAMILIES["AveragePool"]
    entry, ok = infer(family, _measured(family, devices), _predicted(family))
    assert ok is explained
    if devices == ["npu", "npu", "npu"]:
        assert entry is not None and entry["constraints"] == []
    else:
        assert entry is None


def test_mixed_points_without_a_hypothesis_are_unexplained() -> None:
    family = Family("Relu", FAMILIES["Transpose"].points)
    assert infer(family, _measured(family, ["npu", "cpu"]), {}) == (None, False)


def test_profile_document_cites_the_record_and_loads(tmp_path: Path) -> None:
    family = FAMILIES["AveragePool"]
    entry, _ = infer(family, _measured(family, ["cpu", "npu", "npu"]), _predicted(family))
    cal = Calibration(compiler={"name": "rknn-toolkit2", "version": "2.5.0", "target": "rk3588"},
                      points=_measured(family, ["cpu", "npu", "npu"]), ops={"AveragePool": entry, "Erf": None})
    doc = profile_document(cal, "cal", "cal.calibration.json", "rknn-toolkit2-v2.1", {"Erf", "AveragePool"})
    assert doc["evidence"] == "measured" and doc["extends"] == "rknn-toolkit2-v2.1"
    assert doc["ops"]["Erf"] is None
    [constraint] = doc["ops"]["AveragePool"]["constraints"]
    assert constraint["doc"] == "cal.calibration.json#averagepool-pads-count-include-pad"
    path = tmp_path / "cal.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    profile = load_profile(str(path))
    assert "Erf" not in profile.ops and profile.ops["AveragePool"]["constraints"][0]["id"] == \
        "averagepool-pads-count-include-pad"
    record = record_document(cal)
    assert record["ops"] == {"AveragePool": ["averagepool-pads-count-include-pad"], "Erf": None}
    assert [p["device"] for p in record["points"]] == ["cpu", "npu", "npu"]


def test_calibrate_on_the_fake_compiler() -> None:
    """The fake compiler runs Erf on CPU and every other op on the NPU, whatever its shape."""
    cal = calibrate(FakeCompiler(), "fake1", Path(sys.executable))
    assert [(m.point, m.device) for m in cal.points] == [
        ("transpose-1x2x8192x4", "npu"), ("transpose-1x2x8200x4", "npu"),
        ("averagepool-k3-pad1-include0", "npu"), ("averagepool-k3-pad1-include1", "npu"),
        ("averagepool-k3-pad0-include0", "npu"), ("relu-1x16x32x32", "npu"), ("erf-1x16x32x32", "cpu")]
    assert {op: (None if e is None else e["constraints"]) for op, e in cal.ops.items()} == {
        "Transpose": [], "AveragePool": [], "Relu": [], "Erf": None}
    assert cal.unexplained == []
    assert cal.compiler["name"] == "fake-compiler"


RKNN_VENV = Path(os.environ.get("NPU_GATE_RKNN_VENV", Path(__file__).resolve().parent.parent / ".venv-rknn"))


@pytest.mark.rknn
def test_calibrate_with_rknn_toolkit2(run_cli, tmp_path: Path) -> None:
    if not (RKNN_VENV / "npu-gate-probe.json").exists():
        pytest.skip(f"no RKNN-Toolkit2 venv at {RKNN_VENV}: create it with `npu-gate probe setup rknn {RKNN_VENV}`")
    out = tmp_path / "rknn-rk3588-calibrated.json"
    run = run_cli("profile", "calibrate", "--compiler", "rknn", "--target", "rk3588", "--venv", RKNN_VENV,
                  "--out", out, "--extends", "rknn-toolkit2-v2.1")
    assert run.code == 0, run.err
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["evidence"] == "measured" and doc["extends"] == "rknn-toolkit2-v2.1"
    ops = {op: (None if e is None else [c["id"] for c in e["constraints"]]) for op, e in doc["ops"].items()}
    assert ops == {"AveragePool": ["averagepool-pads-count-include-pad"], "Erf": None, "Relu": [],
                   "Transpose": ["transpose-dim2-max-8192"]}
    record = json.loads((tmp_path / "rknn-rk3588-calibrated.calibration.json").read_text(encoding="utf-8"))
    assert record["compiler"]["version"] == "2.5.0" and record["unexplained"] == []
    assert [(p["point"], p["device"]) for p in record["points"]] == [
        ("transpose-1x2x8192x4", "npu"), ("transpose-1x2x8200x4", "cpu"),
        ("averagepool-k3-pad1-include0", "cpu"), ("averagepool-k3-pad1-include1", "npu"),
        ("averagepool-k3-pad0-include0", "npu"), ("relu-1x16x32x32", "npu"), ("erf-1x16x32x32", "cpu")]
    load_profile(str(out))

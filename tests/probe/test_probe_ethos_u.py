"""Arm Ethos-U (ExecuTorch's Arm backend + Vela): parsing on captured runs, and the real flow.

The parsing tests read what a real run printed (tests/fixtures/ethos_u: u55_constraint.log and
its response.json from `npu-gate probe --factory nets:constraint_net --compiler ethos-u --target
ethos-u55-128 --inputs x:1,3,32,32 --keep-work DIR`, u85_constraint.log for ethos-u85-256) and
the gate's own dynamo export of the same net (constraint_net.onnx).

The `ethos_u`-marked tests run the real flow: `pytest -m ethos_u` with the venv from
`npu-gate probe setup ethos-u VENV` (NPU_GATE_ETHOS_U_VENV, default .venv-ethos-u); without it
they SKIP with the reason, never pass.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from npu_gate.probe.base import ChildRun, CompilerOutput
from npu_gate.probe.ethos_u import LEGACY, EthosUCompiler, estimates, parse_rejected, parse_vela, rows_for
from tests.helpers import probe_models
from tests.helpers.common import REPO, RunCli, SaveModel, probe_venv

if TYPE_CHECKING:
    import onnx

FIXTURES = REPO / "tests" / "fixtures" / "ethos_u"
# absolute: a contract resolves a relative venv from its own folder
VENV = Path(os.environ.get("NPU_GATE_ETHOS_U_VENV", REPO / ".venv-ethos-u")).absolute()
U55_STRIDE = ("Unsupported stride of (3, 3) for Ethos-U55. You can use stride of (1,1) or (2,2), stride (1,2) for "
              "IFM height kernel height of 1 and stride(2,1) for IFM width and kernel width of 1")


def _log(name: str) -> list[str]:
    return (FIXTURES / name).read_text(encoding="utf-8").split("\n")


def _response() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((FIXTURES / "u55_constraint.response.json").read_text(encoding="utf-8"))
    return doc


def test_rejected_table_rows_with_wrapped_cells_joined() -> None:
    assert parse_rejected(_log("u55_constraint.log")) == [
        {"node": "aten_convolution_default_2", "target": "aten.convolution.default",
         "torch_fn": "('conv_transpose2d_1', 'builtin_function_or_method.conv_transpose2d')", "reason": U55_STRIDE},
        {"node": "aten_upsample_bilinear2d_vec", "target": "aten.upsample_bilinear2d.vec",
         "torch_fn": "('interpolate_1', 'function.interpolate')", "reason": "Op is not supported on U55."},
        {"node": "aten_max_pool2d_with_indices_default", "target": "aten.max_pool2d_with_indices.default",
         "torch_fn": "('max_pool2d_1', 'function.max_pool2d')", "reason": "Maxpool2d needs stride <= 3, got [8, 8]"},
    ]
    assert parse_rejected(_log("u85_constraint.log")) == []  # "No nodes rejected."


def test_vela_summary_per_partition() -> None:
    parts = parse_vela(_log("u55_constraint.log"))
    assert [{k: v for k, v in p.items() if k != "layers"} for p in parts] == [
        {"accelerator": "Ethos_U55_128", "system_config": "Ethos_U55_High_End_Embedded", "memory_mode": "Shared_Sram",
         "clock": "500 MHz", "sram_bytes": sram, "flash_bytes": flash, "cpu_operators": 0, "npu_operators": npu}
        for sram, flash, npu in ((24576, 399, 20), (16896, 1116, 69), (9359, 143, 5))]  # 24.00, 16.50, 9.14 KiB
    assert [len(p["layers"]) for p in parts] == [20, 69, 5]
    assert parts[2]["layers"][2] == {"op": "Conv2D", "target": "npu", "cycles": 2176, "name": "tosa_rescale_default"}
    u85 = parse_vela(_log("u85_constraint.log"))
    assert len(u85) == 1 and u85[0]["memory_mode"] == "Sram_Only" and u85[0]["sram_bytes"] == 27648


def test_estimates_say_whose_and_for_which_config() -> None:
    doc = estimates(parse_vela(_log("u55_constraint.log")), "5.2.0", "regor (default)")
    assert doc["evidence"] == "estimated by Vela 5.2.0 for Ethos_U55_128, Ethos_U55_High_End_Embedded, Shared_Sram"
    # SRAM: the largest partition (they run one after another); flash and cycles: summed
    assert (doc["sram_bytes"], doc["flash_bytes"], doc["cycles"]) == (24576, 399 + 1116 + 143, 154771)
    assert doc["estimated_ms"] == round(154771 / 500e3, 4)  # cycles at the 500 MHz Vela assumed
    assert (doc["npu_partitions"], doc["vela_cpu_operators"], doc["core"]) == (3, 0, "regor (default)")


def test_rows_map_lowered_nodes_to_the_gate_onnx_by_module_and_line() -> None:
    log = _log("u55_constraint.log")
    rows, unmapped, reasons = rows_for(FIXTURES / "constraint_net.onnx", _response()["placement"],
                                       parse_rejected(log), parse_vela(log))
    assert [(r.full_name, r.op_type, r.target) for r in rows] == [
        ("node_conv2d", "Conv", "npu"), ("node_relu", "Relu", "npu"), ("node_conv2d_1", "Conv", "npu"),
        ("node_max_pool2d", "MaxPool", "npu"), ("node_upsample_bilinear2d", "Resize", "cpu"),
        ("node_add", "Add", "npu"), ("node_convolution", "ConvTranspose", "cpu"), ("node_conv2d_2", "Conv", "npu")]
    assert unmapped == []
    assert reasons == {
        "node_max_pool2d": "in an NPU delegate although the partitioner's table rejected it: "
                           "Maxpool2d needs stride <= 3, got [8, 8]",
        "node_upsample_bilinear2d": "Op is not supported on U55.",
        "node_convolution": U55_STRIDE,
    }


def test_nodes_without_a_lowered_match_are_unmapped_not_guessed() -> None:
    log = _log("u55_constraint.log")
    placement = [n for n in _response()["placement"] if n["module_path"] != "up"]
    rows, unmapped, _ = rows_for(FIXTURES / "constraint_net.onnx", placement, parse_rejected(log), parse_vela(log))
    assert unmapped == ["node_convolution"]
    assert "node_convolution" not in {r.full_name for r in rows}
    # Vela itself put ops of a partition on the CPU: which ONNX nodes those are is not known
    parts = parse_vela(log)
    parts[0]["cpu_operators"] = 1
    rows, unmapped, _ = rows_for(FIXTURES / "constraint_net.onnx", _response()["placement"], [], parts)
    assert [r.full_name for r in rows] == ["node_upsample_bilinear2d", "node_convolution"]
    assert len(unmapped) == 6


def _run(tmp_path: Path, response: dict[str, Any], log: list[str],
         legacy: bool = False) -> tuple[EthosUCompiler, CompilerOutput]:
    (tmp_path / "request.json").write_text(json.dumps({"model": str(FIXTURES / "constraint_net.onnx"),
                                                       **({LEGACY: True} if legacy else {})}), encoding="utf-8")
    compiler = EthosUCompiler()
    return compiler, compiler.parse(ChildRun(returncode=0, log=log, response=response, seconds=1.0), tmp_path)


def test_parse_a_run_records_the_core_and_estimates(tmp_path: Path) -> None:
    _, out = _run(tmp_path, _response(), _log("u55_constraint.log"))
    assert out.version == "5.2.0" and out.core == "regor (default)" and out.error is None
    assert [r.target for r in out.rows].count("cpu") == 2 and out.unmapped == []
    assert out.estimates is not None and out.estimates["sram_bytes"] == 24576
    assert out.retry_rule is None


def test_no_legacy_core_retry_on_the_pytorch_route(tmp_path: Path) -> None:
    # measured: Vela 5.2.0 refuses --debug-force-legacy-core for TOSA input (ExecuTorch's)
    failed = {"status": "failed", "stage": "lower", "version": "5.2.0",
              "error": "lower: RuntimeError: Non-passthrough operation (Conv2D) could not run on NPU"}
    compiler, out = _run(tmp_path, failed, [])
    assert out.rows == [] and out.error == failed["error"] and out.core == "regor (default)"
    assert compiler.retry_options(out, {"factory": "nets:constraint_net"}) is None
    _, legacy = _run(tmp_path, failed, [], legacy=True)
    assert legacy.core == "legacy (--debug-force-legacy-core)"


# --- the real flow (needs the venv) ---

@pytest.fixture(scope="module")
def venv() -> Path:
    return probe_venv(VENV, "ethos-u", "Ethos-U")  # the probe runs from the fixtures folder (--factory imports from it)


def _probe(run_cli: RunCli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, venv: Path, target: str) -> dict[str, Any]:
    monkeypatch.chdir(FIXTURES)  # --factory nets:... imports from the working folder
    out = tmp_path / "probe.json"
    run = run_cli("probe", "--factory", "nets:constraint_net", "--compiler", "ethos-u", "--target", target,
                  "--venv", venv, "--inputs", "x:1,3,32,32", "--json", out, "--quiet")
    assert run.code == 0, run.err
    doc: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return doc


def _placed(doc: dict[str, Any]) -> dict[str, tuple[str | None, str | None]]:
    return {n["name"]: (n["actual"], n["reason"]) for n in doc["nodes"]}


@pytest.mark.ethos_u
@pytest.mark.torch
def test_u55_puts_the_stride3_conv_transpose_and_bilinear_resize_on_the_cpu(run_cli: RunCli,
                                                                            monkeypatch: pytest.MonkeyPatch,
                                                                            tmp_path: Path,
                                                                           venv: Path) -> None:
    doc = _probe(run_cli, monkeypatch, tmp_path, venv, "ethos-u55-128")
    assert doc["compiler"] == {"name": "ethos-u-vela", "version": "5.2.0", "target": "ethos-u55-128",
                               "plugin": "ethos-u", "core": "regor (default)"}
    placed = _placed(doc)
    assert placed["node_convolution"] == ("cpu", U55_STRIDE)
    assert placed["node_upsample_bilinear2d"] == ("cpu", "Op is not supported on U55.")
    # measured: ExecuTorch 1.5.1 lowers the stride-4 Conv and the 8x8/stride-8 MaxPool to U55 all the same
    assert placed["node_conv2d_1"] == ("npu", None)
    assert placed["node_max_pool2d"][0] == "npu" and "got [8, 8]" in (placed["node_max_pool2d"][1] or "")
    assert {n for n, (actual, _) in placed.items() if actual == "cpu"} == {"node_convolution",
                                                                           "node_upsample_bilinear2d"}
    assert doc["estimates"]["evidence"] == ("estimated by Vela 5.2.0 for Ethos_U55_128, Ethos_U55_High_End_Embedded, "
                                            "Shared_Sram")
    assert doc["estimates"]["npu_partitions"] == 3 and doc["estimates"]["sram_bytes"] > 0


@pytest.mark.ethos_u
@pytest.mark.torch
def test_u85_runs_the_whole_constraint_net(run_cli: RunCli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                           venv: Path) -> None:
    doc = _probe(run_cli, monkeypatch, tmp_path, venv, "ethos-u85-256")
    assert set(_placed(doc).values()) == {("npu", None)} and len(doc["nodes"]) == 8
    assert doc["estimates"]["evidence"].startswith("estimated by Vela 5.2.0 for Ethos_U85_256")
    assert doc["estimates"]["npu_partitions"] == 1


def test_an_onnx_model_without_a_factory_is_refused(run_cli: RunCli, save_model: SaveModel, tmp_path: Path) -> None:
    model = save_model(probe_models.MODELS["seed_hardswish"](), "m.onnx")
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text("")
    run = run_cli("probe", model, "--compiler", "ethos-u", "--target", "ethos-u55-128",
                  "--venv", venv)
    assert run.code == 2
    assert run.err.strip() == ("npu-gate: error: m.onnx: the ethos-u probe lowers a PyTorch module: "
                               "give it with --factory MODULE:FUNCTION or a torch contract's target.probe (the "
                               "ONNX route, onnx2tf to int8 TFLite, is not built yet: its result depends on that "
                               "converter as much as on Vela)")


def test_quantize_is_refused_before_the_factory_runs(run_cli: RunCli, tmp_path: Path) -> None:
    """Arm's flow always builds int8 with its own quantizer: --quantize is refused up front, before the
    factory is imported (a missing module would give another error)."""
    run = run_cli("probe", "--factory", "no_such_module:net", "--compiler", "ethos-u", "--quantize", "int8",
                  "--inputs", "x:1,3,8,8", "--venv", tmp_path / "venv")
    assert run.code == 2
    assert run.err.strip() == ("npu-gate: error: --quantize int8: the ethos-u plug-in always builds int8 with Arm's "
                               "own quantizer (EthosUQuantizer), calibrated on 4 seeded rows (probe --factory) or a "
                               "torch contract's quantization samples; leave out --quantize")


def test_a_replay_without_the_gate_export_fails_with_the_reason(tmp_path: Path) -> None:
    (tmp_path / "request.json").write_text(json.dumps({"model": str(tmp_path / "gone.onnx")}), encoding="utf-8")
    run = ChildRun(returncode=0, log=_log("u55_constraint.log"), response=_response(), seconds=1.0)
    out = EthosUCompiler().parse(run, tmp_path)
    assert out.rows == [] and out.error == (f"{tmp_path / 'gone.onnx'}: the gate's ONNX export is gone: "
                                            "the compiler's nodes cannot be mapped")


# --- Convs the exporter fused with their BatchNorm ---

def _conv(name: str, scope: str, line: int, fused: bool = True) -> onnx.NodeProto:
    from onnx import helper

    node = helper.make_node("Conv", [f"{name}_in"], [f"{name}_out"], name=name)
    props = {"pkg.torch.onnx.name_scopes": str(["", *scope.split(".")[:1], scope, "bn"]),
             "pkg.torch.onnx.stack_trace": f'File "/work/models/net.py", line {line}, in forward\n    x = self.f(x)'}
    if fused:
        props["pkg.onnxscript.rewriter.rule_name"] = "RemoveOptionalBiasFromConv, FuseBatchNormIntoConv"
    for key, value in props.items():
        node.metadata_props.add(key=key, value=value)
    return node


def _lowered(name: str, module_path: str, line: int, device: str) -> dict[str, Any]:
    return {"name": name, "target": "aten.convolution.default", "device": device, "module_path": module_path,
            "torch_fn": None, "stack_trace": f'File "/work/models/net.py", line {line}, in forward\n    x = self.f(x)'}


def _fused_rows(tmp_path: Path, nodes: list[Any], placement: list[dict[str, Any]]) -> tuple[dict[str, Any], list[str]]:
    import onnx
    from onnx import helper

    graph = helper.make_graph(nodes, "g", [], [])
    path = tmp_path / "fused.onnx"
    onnx.save(helper.make_model(graph), str(path))
    rows, unmapped, _ = rows_for(path, placement, [], [])
    return {r.full_name: r.target for r in rows}, unmapped


def test_a_conv_fused_with_its_batchnorm_is_tied_to_the_convolution_beside_it(tmp_path: Path) -> None:
    # ONNX: the fused Conv carries the BatchNorm's path (stem.1); ExecuTorch's convolution keeps stem.0
    placed, unmapped = _fused_rows(tmp_path, [_conv("c0", "stem.1", 10)], [_lowered("conv", "stem.0", 10, "npu")])
    assert placed == {"c0": "npu"} and unmapped == []


def test_several_in_one_module_and_line_are_tied_in_execution_order(tmp_path: Path) -> None:
    nodes = [_conv("c0", "body.1", 27), _conv("c1", "body.4", 27)]
    placement = [_lowered("conv_a", "body.0", 27, "npu"), _lowered("conv_b", "body.3", 27, "cpu")]
    assert _fused_rows(tmp_path, nodes, placement) == ({"c0": "npu", "c1": "cpu"}, [])


def test_fused_convs_stay_unmapped_when_the_counts_disagree_or_nothing_says_fused(tmp_path: Path) -> None:
    nodes = [_conv("c0", "body.1", 27), _conv("c1", "body.4", 27)]
    assert _fused_rows(tmp_path, nodes, [_lowered("conv_a", "body.0", 27, "npu")]) == ({}, ["c0", "c1"])
    # another line, or a Conv the optimizer did not fuse: never tied
    assert _fused_rows(tmp_path, [_conv("c0", "stem.1", 11)], [_lowered("conv", "stem.0", 10, "npu")]) == (
        {}, ["c0"])
    assert _fused_rows(tmp_path, [_conv("c0", "stem.1", 10, fused=False)],
                       [_lowered("conv", "stem.0", 10, "npu")]) == ({}, ["c0"])

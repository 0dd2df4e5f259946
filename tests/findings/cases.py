"""One failing and one passing case per rule of ``npu_gate.rules.RULES``, as data.

Each entry is a pair of small scenarios built in code: the failing one gives the rule's finding,
the passing one is its nearest neighbour (the same graph, profile or contract with the one thing
fixed) and gives none, so the pair shows where the rule's boundary is. A scenario writes its
files (an ONNX model built with onnx.helper, a profile, a contract, a factory module) into a
folder and returns the ``npu-gate`` command line that runs it (``inspect`` or ``check``);
tests/findings/test_rule_cases.py runs it in-process with ``--json`` and compares.

``findings`` are the failing run's findings of the rule, in order, with every field of their
JSON but the prose (``message``, ``fix``, ``evidence_detail``): exactly, absent keys included.
``message`` is how the first one's message starts; for ``contract-invalid`` (exit 2, no result)
it is the error line on stderr, ``{folder}`` standing for the scenario's folder.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from tests.helpers import cleanup_models, model_zoo, probe_models, profile_builders, rewrite_zoo
from tests.helpers.hook_fixtures import tiny_model

Build = Callable[[Path], list[str]]
"""Writes a scenario's files into the folder; returns the CLI arguments that run it."""

Model = Callable[[], onnx.ModelProto]

HEAD = {"name": "case", "description": "a profile of tests/findings/cases.py", "source": "tests",
        "evidence": "illustrative"}


@dataclass(frozen=True)
class Scenario:
    build: Build
    code: int  # the exit code


@dataclass(frozen=True)
class RuleCase:
    rule: str
    failing: Scenario
    passing: Scenario
    findings: tuple[dict[str, Any], ...]
    message: str
    torch: bool = False  # runs PyTorch (in the user-code child): a torch contract
    slow: bool = False  # over the suite's 3 s


# --- writing a scenario's files -------------------------------------------------------------------

def _save(folder: Path, model: onnx.ModelProto, name: str = "model.onnx") -> Path:
    path = folder / name
    path.write_bytes(model.SerializeToString())
    return path


def _profile(folder: Path, profile: str | dict[str, Any]) -> str:
    """A built-in profile's name, or a profile document written as ``profile.json`` (its path)."""
    if isinstance(profile, str):
        return profile
    path = folder / "profile.json"
    path.write_text(json.dumps(HEAD | profile), encoding="utf-8")
    return str(path)


def _model_inputs(model: onnx.ModelProto) -> list[dict[str, Any]]:
    """The contract's ``inputs`` for a model with static float inputs: its own shapes."""
    inits = {i.name for i in model.graph.initializer}
    return [{"name": i.name, "dtype": "float32", "shape": [d.dim_value for d in i.type.tensor_type.shape.dim]}
            for i in model.graph.input if i.name not in inits]


def inspect(model: Model, profile: str | dict[str, Any] = "demo", *args: str) -> Build:
    """``npu-gate inspect model.onnx --profile ...``."""
    def build(folder: Path) -> list[str]:
        path = _save(folder, model())
        return ["inspect", str(path), "--profile", _profile(folder, profile), *args]

    return build


def check(model: Model, profile: str | dict[str, Any] = "demo", *args: str,
          files: dict[str, str | Model] | None = None, **contract: Any) -> Build:
    """``npu-gate check npu-gate.json`` of an ONNX contract: ``contract`` are its top-level keys
    (``inputs`` defaults to the model's, ``target`` to the profile), ``files`` more files beside it
    (text, or a model)."""
    def build(folder: Path) -> list[str]:
        built = model()
        _save(folder, built)
        for name, content in (files or {}).items():
            if isinstance(content, str):
                (folder / name).write_text(content, encoding="utf-8")
            else:
                _save(folder, content(), name)
        doc = {"model": {"onnx": "model.onnx"}, "inputs": _model_inputs(built),
               "target": {"profile": _profile(folder, profile)}, **contract}
        (folder / "npu-gate.json").write_text(json.dumps(doc), encoding="utf-8")
        return ["check", str(folder / "npu-gate.json"), *args]

    return build


TORCH_NET = """import torch


def refuse(x):
    raise RuntimeError("unsupported thing in forward")


class Net(torch.nn.Module):
    def forward(self, x):
        return {forward}


def build():
    return Net()
"""


def check_torch(forward: str, **contract: Any) -> Build:
    """A torch contract: ``net.py``'s module returns ``forward``, an expression of its input x
    ([1, 4] in [-1, 1]; ``refuse(x)`` raises), exported by torchscript at opset 17, under demo."""
    def build(folder: Path) -> list[str]:
        (folder / "net.py").write_text(TORCH_NET.format(forward=forward), encoding="utf-8")
        doc = {"model": {"torch": {"factory": "net:build", "exporter": "torchscript", "opset": 17}},
               "inputs": [{"name": "x", "shape": [1, 4], "dtype": "float32", "range": [-1, 1]}],
               "target": {"profile": "demo"}, **contract}
        (folder / "npu-gate.json").write_text(json.dumps(doc), encoding="utf-8")
        return ["check", str(folder / "npu-gate.json")]

    return build


# --- models ---------------------------------------------------------------------------------------

def _f32(name: str, shape: list[Any] | None) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def _graph_model(nodes: list[onnx.NodeProto], inputs: list[onnx.ValueInfoProto],
                 outputs: list[onnx.ValueInfoProto], inits: list[onnx.TensorProto] | None = None,
                 opset: int = 17) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "case", inputs, outputs, initializer=inits or [])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def shaped(builder: Callable[..., onnx.ModelProto], **args: Any) -> Model:
    """A builder's model (``profile_builders``' leave the output's shape out) with its outputs'
    shapes inferred, so that onnx.checker's full check accepts it."""
    return lambda: onnx.shape_inference.infer_shapes(builder(**args))


def tiny_with(cpu_op: str | None = None, output: list[int] | None = None) -> Model:
    """``tiny_model`` (x [1, 4] -> Mul -> Add [-> cpu_op] -> y), its output declared ``output``."""
    def make() -> onnx.ModelProto:
        model = tiny_model(cpu_op)
        if output is not None:
            del model.graph.output[:]
            model.graph.output.append(_f32("y", output))
        return model

    return make


def input_as_initializer(shape: tuple[int, ...]) -> Model:
    """x [1, 4] -> Mul(x, x) -> y, with an initializer named x (its default value) of ``shape``."""
    def make() -> onnx.ModelProto:
        init = numpy_helper.from_array(np.zeros(shape, np.float32), "x")
        return _graph_model([helper.make_node("Mul", ["x", "x"], ["y"], name="mul0")],
                            [_f32("x", [1, 4])], [_f32("y", [1, 4])], [init])

    return make


def reshape_by(shape_is_input: bool) -> Model:
    """x [1, 4] -> Reshape(x, s) -> Relu -> y; s is a graph input (its values unknown) or an
    initializer [4, 1]."""
    def make() -> onnx.ModelProto:
        s = helper.make_tensor_value_info("s", TensorProto.INT64, [2])
        inits = [] if shape_is_input else [numpy_helper.from_array(np.array([4, 1], np.int64), "s")]
        model = _graph_model([helper.make_node("Reshape", ["x", "s"], ["r"], name="reshape0"),
                              helper.make_node("Relu", ["r"], ["y"], name="relu0")],
                             [_f32("x", [1, 4]), *([s] if shape_is_input else [])], [_f32("y", None)], inits)
        return onnx.shape_inference.infer_shapes(model)

    return make


def with_batch(model: Model, batch: int) -> Model:
    """``model`` with its first input's dim 0 fixed to ``batch``."""
    def make() -> onnx.ModelProto:
        built = model()
        built.graph.input[0].type.tensor_type.shape.dim[0].dim_value = batch
        return built

    return make


def loop_pads(trips: int) -> Model:
    """x [1, 3, 4, 4] -> Pad by pads a Loop of ``trips`` iterations computes from constants."""
    def make() -> onnx.ModelProto:
        body = helper.make_graph(
            [helper.make_node("Identity", ["cond_in"], ["cond_out"], name="body_cond"),
             helper.make_node("Identity", ["v_in"], ["v_out"], name="body_v")],
            "body",
            [helper.make_tensor_value_info("i", TensorProto.INT64, []),
             helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
             helper.make_tensor_value_info("v_in", TensorProto.INT64, [8])],
            [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
             helper.make_tensor_value_info("v_out", TensorProto.INT64, [8])])
        nodes = [
            helper.make_node("Constant", [], ["M"], name="trip",
                             value=helper.make_tensor("m", TensorProto.INT64, [], [trips])),
            helper.make_node("Constant", [], ["cond"], name="cond",
                             value=helper.make_tensor("c", TensorProto.BOOL, [], [True])),
            helper.make_node("Constant", [], ["init"], name="init",
                             value=helper.make_tensor("p", TensorProto.INT64, [8], [0, 0, 1, 1] * 2)),
            helper.make_node("Loop", ["M", "cond", "init"], ["pads"], name="loop", body=body),
            helper.make_node("Pad", ["x", "pads"], ["y"], name="pad"),
        ]
        return _graph_model(nodes, [_f32("x", [1, 3, 4, 4])], [_f32("y", ["a", "b", "c", "d"])])

    return make


def wide_head(n: int) -> Model:
    """x [1, 2, 8] -> Relu -> MatMul by a constant [8, n] (an nn.Linear head of n features) -> Relu."""
    def make() -> onnx.ModelProto:
        w = numpy_helper.from_array(np.full((8, n), 0.5, np.float32), "w")
        return _graph_model([helper.make_node("Relu", ["x"], ["a"], name="before"),
                             helper.make_node("MatMul", ["a", "w"], ["m"], name="fc"),
                             helper.make_node("Relu", ["m"], ["y"], name="after")],
                            [_f32("x", [1, 2, 8])], [_f32("y", [1, 2, n])], [w])

    return make


def matmul_2d(k: int) -> onnx.ModelProto:
    """``probe_models.matmul_rank2`` (x [4, 32] -> MatMul [32, 16] -> Relu) with ``k`` input features."""
    w = numpy_helper.from_array(np.full((k, 16), 0.1, np.float32), "mm.w")
    return _graph_model([helper.make_node("MatMul", ["x", "mm.w"], ["m"], name="mm"),
                         helper.make_node("Relu", ["m"], ["y"], name="relu")],
                        [_f32("x", [4, k])], [_f32("y", [4, 16])], [w])


def qdq_conv(bias: str) -> Model:
    """x -> Q/DQ (uint8) -> Conv (weight DQ int8 per channel, bias DQ of dtype ``bias``) -> y: with
    an int32 bias onnxruntime forms the Conv's QDQ unit, with a uint8 one none."""
    def make() -> onnx.ModelProto:
        def const(name: str, value: Any, dtype: Any) -> onnx.TensorProto:
            return numpy_helper.from_array(np.array(value, dtype), name)

        inits = [const("xs", 0.1, np.float32), const("xz", 128, np.uint8),
                 const("wq", np.ones((2, 1, 1, 1)), np.int8), const("ws", [0.1, 0.2], np.float32),
                 const("wz", [0, 0], np.int8),
                 const("bq", [1, 2], np.int32 if bias == "int32" else np.uint8),
                 const("bs", 0.01, np.float32),
                 const("bz", 0, np.int32 if bias == "int32" else np.uint8)]
        nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"], name="x_q"),
                 helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"], name="x_dq"),
                 helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["w"], name="w_dq", axis=0),
                 helper.make_node("DequantizeLinear", ["bq", "bs", "bz"], ["b"], name="b_dq"),
                 helper.make_node("Conv", ["xd", "w", "b"], ["y"], name="conv")]
        return _graph_model(nodes, [_f32("x", [1, 1, 4, 4])], [_f32("y", [1, 2, 4, 4])], inits, opset=13)

    return make


def qdq_relu(dtype: int) -> Model:
    """x -> Q/DQ -> Relu -> Q/DQ -> y, quantized to ``dtype`` (int8 or uint8)."""
    def make() -> onnx.ModelProto:
        zero = np.int8 if dtype == TensorProto.INT8 else np.uint8
        inits = [numpy_helper.from_array(np.array(0.1, np.float32), "s"),
                 numpy_helper.from_array(np.array(0, zero), "z")]
        nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"], name="x_q"),
                 helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["xd"], name="x_dq"),
                 helper.make_node("Relu", ["xd"], ["r"], name="relu"),
                 helper.make_node("QuantizeLinear", ["r", "s", "z"], ["rq"], name="r_q"),
                 helper.make_node("DequantizeLinear", ["rq", "s", "z"], ["y"], name="r_dq")]
        return _graph_model(nodes, [_f32("x", [1, 4])], [_f32("y", [1, 4])], inits)

    return make


def mystery_last(model: Model) -> Model:
    """``model`` with its last node turned into ``acme::Mystery``, a custom-domain op no runtime knows."""
    def make() -> onnx.ModelProto:
        built = model()
        node = built.graph.node[-1]
        node.domain, node.op_type = "acme", "Mystery"
        built.opset_import.append(helper.make_opsetid("acme", 1))
        return built

    return make


def hardswish_with_six(six: float) -> Model:
    """``rewrite_zoo.hardswish_by_hand`` with its 6 (the Clip's max and the divisor) set to ``six``."""
    def make() -> onnx.ModelProto:
        model = rewrite_zoo.hardswish_by_hand()
        for i, init in enumerate(model.graph.initializer):
            if init.name == "six":
                model.graph.initializer[i].CopyFrom(numpy_helper.from_array(np.array(six, np.float32), "six"))
        return model

    return make


def renamed(model: Model, old: str, new: str) -> Model:
    """``model`` with its node ``old`` named ``new``."""
    def make() -> onnx.ModelProto:
        built = model()
        for node in built.graph.node:
            if node.name == old:
                node.name = new
        return built

    return make


SAMPLES_METRIC = '''def count(reference, candidate, samples):
    return {"samples": len(samples)}
'''


def samples_metric(least: int) -> dict[str, Any]:
    """The contract's ``metric``: task_metric.count (how many samples it saw) at least ``least``."""
    return {"callable": "task_metric:count", "threshold": {"samples": {"min": least}}}


# --- profiles and contract parts ------------------------------------------------------------------

RELU = {"extends": "demo", "ops": {"Relu": {"constraints": []}}}
PAD = {"extends": "demo", "ops": {"Pad": {"constraints": []}}}
RESHAPE = {"extends": "demo", "ops": {"Reshape": {"constraints": []}, "Relu": {"constraints": []}}}
CONV_STRIDE_1 = {"ops": {"Conv": {"constraints": [
    {"id": "conv-stride", "attribute": "strides", "each": True, "in": [1]}]}}}
MAX_RANK_4 = {"limits": {"max_rank": 4}, "ops": {"Relu": {"constraints": []}}}
UNCHECKED_FLOAT = {"ops": {"Relu": {"constraints": [
    {"id": "relu-float-values", "unchecked": True, "when": {"input": 0, "dtype": ["float32"]},
     "message": "float inputs must be finite: not checked"}]}}}
STANDALONE = {"ops": {"Conv": {"constraints": []}, "QuantizeLinear": {"constraints": []},
                      "DequantizeLinear": {"constraints": []}},
              "standalone_qdq": [{"id": "standalone-per-channel-dq", "per_channel": True, "device": "cpu",
                                  "message": "no standalone DQ with per-channel scales",
                                  "evidence": "measured: a case"}]}
RELU_NOT_INT8 = {"ops": {
    "Relu": {"constraints": [{"id": "relu-no-int8", "input": 0, "dtype": ["float32", "uint8"],
                              "when": {"input": 0, "dtype": ["int8"]}}]},
    "QuantizeLinear": {"constraints": []}, "DequantizeLinear": {"constraints": []}}}
# Runs a hand-written HardSwish (Add, Clip, Mul, Div) but not the HardSwish op.
ELEMENTWISE: dict[str, Any] = {"ops": {"Conv": {}, "Add": {}, "Mul": {}, "Div": {}, "Clip": {}}}


def sram_budget(sram_bytes: int) -> dict[str, Any]:
    """demo with a memory budget of ``sram_bytes`` per NPU partition."""
    return {"extends": "demo", "ops": {}, "memory": {"sram_bytes": sram_bytes, "evidence": "a budget of the case"}}


FEW_SAMPLES = {"calibration": {"count": 4}, "holdout": {"count": 2}}
EXPIRES_JUNE = [{"rule": "unsupported-op", "reason": "ships on CPU", "expires": "2026-06-01"}]
WAIVE_CPU0 = [{"rule": "unsupported-op", "node": "cpu0", "reason": "ships on CPU"}]
FAKE_PROBE = {"profile": "demo", "probe": {"compiler": "fake", "target": "fake1"}}


def _case(rule: str, failing: Build, failing_code: int, passing: Build, passing_code: int,
          findings: list[dict[str, Any]], message: str, *, torch: bool = False, slow: bool = False) -> RuleCase:
    return RuleCase(rule, Scenario(failing, failing_code), Scenario(passing, passing_code), tuple(findings), message,
                    torch=torch, slow=slow)


# Per rule: the failing scenario and its exit code, the passing one and its exit code, the failing
# run's findings of the rule (each also has ``rule`` and ``waived: false``), how the first message starts.
CASES: list[RuleCase] = [
    _case("contract-invalid",
          check(tiny_with(), "no-such-profile"), 2,
          check(tiny_with(), "demo"), 0,
          [], "npu-gate: error: {folder}/npu-gate.json: target.profile: unknown profile 'no-such-profile' (built-in: "),
    _case("export-failed",
          check_torch("refuse(x)"), 1,
          check_torch("x * 2"), 0,
          [{"severity": "error"}],
          "torchscript export failed: RuntimeError: unsupported thing in forward", torch=True, slow=True),
    _case("onnx-checker",
          inspect(tiny_with(output=[1, 4, 1])), 1,
          inspect(tiny_with(output=[1, 4])), 0,
          [{"severity": "error", "node": "add0", "op_type": "Add"}],  # the full check names the node
          "full check: [ShapeInferenceError] Inference error(s): (op_type:Add, node name: add0): "
          "[ShapeInferenceError] Inferred shape and existing shape differ in rank: (2) vs (3)"),
    _case("fold-budget",
          inspect(loop_pads(2**62), PAD), 1,
          inspect(loop_pads(3), PAD), 0,
          [{"severity": "warning", "node": "loop", "op_type": "Loop", "constraint": "iterations", "actual": 2**62,
            "allowed": 10_000}],
          f"value of pads not computed while folding: trip count {2**62} exceeds the budget of 10000 iterations"),
    _case("shape-inference",
          inspect(input_as_initializer((2, 4))), 1,
          inspect(input_as_initializer((1, 4))), 0,
          [{"severity": "warning"}],
          "[ShapeInferenceError] Inferred shape and existing shape differ in dimension 0: (2) vs (1)"),
    _case("input-mismatch",
          check(tiny_with(), inputs=[{"name": "x", "shape": [1, 4], "dtype": "float16"}]), 1,
          check(tiny_with(), inputs=[{"name": "x", "shape": [1, 4], "dtype": "float32"}]), 0,
          [{"severity": "error", "subject": "x"}],
          "input x: contract dtype float16, model dtype float32"),
    _case("dynamic-input",
          inspect(shaped(profile_builders.unary, op="Relu", x=("N", 4, 8, 8)), RELU), 1,
          inspect(shaped(profile_builders.unary, op="Relu", x=(1, 4, 8, 8)), RELU), 0,
          [{"severity": "error", "subject": "x"}],
          "input x has dynamic shape [N, 4, 8, 8] in the model"),
    _case("dynamic-shape",
          inspect(reshape_by(shape_is_input=True), RESHAPE), 1,
          inspect(reshape_by(shape_is_input=False), RESHAPE), 0,
          [{"severity": "error", "node": "reshape0", "op_type": "Reshape", "cause": ["r"]},
           {"severity": "error", "node": "relu0", "op_type": "Relu", "cause": ["r"]}],
          "output shape not static: r [unk__0, unk__1]"),
    _case("shape-computation",
          inspect(model_zoo.dynamic_reshape_chain, RESHAPE), 1,
          inspect(with_batch(model_zoo.dynamic_reshape_chain, 2), RESHAPE), 0,
          [{"severity": "error", "node": "reshape0", "op_type": "Reshape"}],
          "shape computation for reshape0 (Reshape shape) stays in the graph: shape0 reads x[0] = N (a symbolic "
          "input dim); nodes: shape0, const_idx, gather0, unsqueeze0, concat0"),
    _case("unsupported-op",
          inspect(tiny_with("Relu")), 1,
          inspect(tiny_with("Relu"), RELU), 0,
          [{"severity": "error", "node": "cpu0", "op_type": "Relu"}],
          "op Relu not in profile demo"),
    _case("op-constraint",
          inspect(shaped(profile_builders.conv, strides=[2, 2]), CONV_STRIDE_1), 1,
          inspect(shaped(profile_builders.conv, strides=[1, 1]), CONV_STRIDE_1), 0,
          [{"severity": "error", "node": "node0", "op_type": "Conv", "constraint": "conv-stride", "actual": [2, 2],
            "allowed": [1], "evidence": "illustrative"}],
          "conv-stride: attribute strides [2, 2] not in {1}"),
    _case("profile-limit",
          inspect(shaped(profile_builders.unary, op="Relu", x=(1, 1, 4, 8, 8)), MAX_RANK_4), 1,
          inspect(shaped(profile_builders.unary, op="Relu", x=(1, 4, 8, 8)), MAX_RANK_4), 0,
          [{"severity": "error", "node": "node0", "op_type": "Relu", "constraint": "limit-max-rank", "actual": 5,
            "allowed": 4, "evidence": "illustrative"}] * 2,  # its input, then its output
          "limits.max_rank: input 0 (x) rank 5 above 4"),
    _case("npu-node-split",
          inspect(wide_head(8193), "rknn-rk3588"), 0,
          inspect(wide_head(8192), "rknn-rk3588"), 0,
          [{"severity": "warning", "node": "fc", "op_type": "MatMul",
            "constraint": "matmul-wide-output-transpose-on-cpu", "actual": ["npu", "cpu", "npu"],
            "allowed": "one device",
            "doc": "rknn-rk3588-splits.calibration.json#matmul-const-weight-wide-n", "evidence": "measured"}],
          "fc (MatMul) runs as Conv (NPU) -> Transpose (CPU) -> Reshape (NPU): output 0 dim -1 = 8193 is above the "
          "maximum 8192"),
    _case("compiler-will-refuse",
          inspect(lambda: cleanup_models.drop9(mask=True), "rknn-rk3588"), 1,
          inspect(lambda: cleanup_models.drop9(mask=False), "rknn-rk3588"), 0,
          [{"severity": "error", "node": "drop", "op_type": "Dropout", "constraint": "dropout-opset9-mask",
            "actual": None, "allowed": None, "evidence": "measured"}],
          "Dropout node drop: the compiler says \"Not support 'Dropout' of opset-9!\""),
    _case("eliminated-changes-numerics",
          inspect(lambda: cleanup_models.bn_eps(0.1), "rknn-rk3588"), 0,
          inspect(lambda: cleanup_models.bn_eps(1e-5), "rknn-rk3588"), 0,
          [{"severity": "warning", "node": "bn1", "op_type": "BatchNormalization", "constraint": "relative-change",
            "actual": {"epsilon": 0.1, "relative_change": 0.046537}, "allowed": {"relative_change": 0.001},
            "doc": "rknn-rk3588.calibration.json#eliminate-batchnormalization-identity", "evidence": "measured"}],
          "the compiler removes this BatchNormalization as an identity (scale 1, bias 0, mean 0, variance 1, profile "
          "eliminates identity), but its epsilon 0.1 makes it y = x / sqrt(1 + 0.1): the ONNX model's output is "
          "4.65 % below the build's"),
    _case("unchecked-condition",
          inspect(shaped(profile_builders.unary, op="Relu", dtype="float32"), UNCHECKED_FLOAT), 0,
          inspect(shaped(profile_builders.unary, op="Relu", dtype="float16"), UNCHECKED_FLOAT), 0,
          [{"severity": "info", "node": "node0", "op_type": "Relu", "constraint": "relu-float-values",
            "actual": "unknown", "allowed": "not checked", "evidence": "illustrative"}],
          "float inputs must be finite: not checked"),
    _case("numeric-mismatch",  # tracing keeps the branch the export sample took
          check_torch("x * 2 if x.sum() > 0 else x * 3", numerics={"samples": 8, "seed": 0}), 1,
          check_torch("x * 2", numerics={"samples": 8, "seed": 0}), 0,
          [{"severity": "error", "subject": "output 2"}],
          "output 2: max abs error 0.922, max rel error 0.5 (atol 0.0001, rtol 0.001)", torch=True, slow=True),
    _case("numerics-uninformative",
          check_torch("x * 0"), 0,
          check_torch("x * 2"), 0,
          [{"severity": "warning", "subject": "output 2"}],
          "output 2: the reference is all zero over 4 samples", torch=True, slow=True),
    _case("numerics-failed",  # onnxruntime cannot run the model the rewrite is verified on (its last Conv)
          check(mystery_last(rewrite_zoo.hardswish), ELEMENTWISE, rewrites=["decompose-hardswish"]), 1,
          check(rewrite_zoo.hardswish, ELEMENTWISE, rewrites=["decompose-hardswish"]), 0,
          [{"severity": "error"}],
          "rewrite verification: onnxruntime: Fail: [ONNXRuntimeError] : 1 : FAIL : Fatal error: acme:Mystery(-1) is "
          "not a registered function/op"),
    _case("standalone-qdq",
          inspect(qdq_conv("uint8"), STANDALONE), 1,
          inspect(qdq_conv("int32"), STANDALONE), 0,
          [{"severity": "error", "node": "w_dq", "op_type": "DequantizeLinear",
            "constraint": "standalone-per-channel-dq", "actual": None, "allowed": None,
            "evidence": "measured: a case"}],
          "no QDQ unit: the bias of conv (Conv) is uint8, not int32: no standalone DQ with per-channel scales"),
    _case("quantized-op-unsupported",
          inspect(qdq_relu(TensorProto.INT8), RELU_NOT_INT8), 1,
          inspect(qdq_relu(TensorProto.UINT8), RELU_NOT_INT8), 0,
          [{"severity": "error", "node": "relu", "op_type": "Relu", "constraint": "relu-no-int8", "actual": "int8",
            "allowed": ["float32", "uint8"], "evidence": "illustrative"}],
          "Relu has no int8 kernel on the target (relu-no-int8: input 0 dtype int8 not in [float32, uint8])"),
    _case("quantization-failed",
          check(mystery_last(tiny_with("Relu")), RELU, quantization={}), 1,
          check(tiny_with("Relu"), RELU, quantization={}), 0,
          [{"severity": "error", "subject": "quantization"}],
          "onnxruntime quantize_static: Fail: [ONNXRuntimeError] : 1 : FAIL : Load model from "),
    _case("quantization-error",
          check(tiny_with("Relu"), RELU, quantization=FEW_SAMPLES, gates={"min_output_sqnr_db": 200}), 1,
          check(tiny_with("Relu"), RELU, quantization=FEW_SAMPLES, gates={"min_output_sqnr_db": 20}), 0,
          [{"severity": "error", "node": "cpu0", "constraint": "min_output_sqnr_db", "subject": "output y",
            "actual": pytest.approx(53.298, abs=0.01), "allowed": 200}],
          "output y: SQNR 53.3 dB is below min_output_sqnr_db 200 dB (hold-out samples); worst layer: node cpu0 "
          "(Relu), SQNR 53.3 dB"),
    _case("gate-exceeded",  # the Relu's unsupported-op error stays in both
          check(tiny_with("Relu"), gates={"max_cpu_nodes": 0}), 1,
          check(tiny_with("Relu"), gates={"max_cpu_nodes": 1}), 1,
          [{"severity": "error", "subject": "max_cpu_nodes"}],
          "max_cpu_nodes: 1 exceeds the limit 0"),
    _case("memory-budget",  # x, m and y of [1, 4] float32 are live at once: 48 bytes
          inspect(tiny_with(), sram_budget(47)), 1,
          inspect(tiny_with(), sram_budget(48)), 0,
          [{"severity": "error", "node": "mul0", "constraint": "memory.sram_bytes", "subject": "m", "partition": 0,
            "actual": 48, "allowed": 47}],
          "partition 0: peak live activations 48 bytes (estimated upper bound) exceed memory.sram_bytes 47; largest "
          "live at the peak: m (16 B, from mul0), x (16 B, from a graph input), y (16 B, from add0) (the profile's "
          "budget: a budget of the case)"),
    _case("gate-timeout",
          inspect(tiny_with(), "demo", "--timeout", "0.000001"), 1,
          inspect(tiny_with(), "demo", "--timeout", "60"), 0,
          [{"severity": "error", "constraint": "seconds", "subject": "load", "actual": None, "allowed": 1e-06}],
          "the run reached its time limit of 1e-06 s (--timeout) during load: analysis and the stages after it did "
          "not run; the verdict rests on what was analysed"),
    _case("waiver-expired",
          check(tiny_with("Relu"), "demo", "--today", "2026-07-01", waivers=EXPIRES_JUNE), 1,
          check(tiny_with("Relu"), "demo", "--today", "2026-05-01", waivers=EXPIRES_JUNE), 0,
          [{"severity": "warning", "subject": "waivers[0]"}],
          "waivers[0] (rule=unsupported-op) expired on 2026-06-01 and no longer waives"),
    _case("waiver-unused",
          check(tiny_with(), "demo", waivers=WAIVE_CPU0), 0,
          check(tiny_with("Relu"), "demo", waivers=WAIVE_CPU0), 0,
          [{"severity": "info", "subject": "waivers[0]"}],
          "waivers[0] (rule=unsupported-op, node=cpu0) matched no finding"),
    _case("rewrite-mismatch",  # the HardSwish stays on CPU in both: unsupported-op
          check(rewrite_zoo.hardswish, ELEMENTWISE, replacement={"onnx": "mine.onnx"},
                files={"mine.onnx": hardswish_with_six(5.0)}), 1,
          check(rewrite_zoo.hardswish, ELEMENTWISE, replacement={"onnx": "mine.onnx"},
                files={"mine.onnx": hardswish_with_six(6.0)}), 1,
          [{"severity": "error", "subject": "replacement output y"}],
          "replacement at output y: max abs error 0.252, max rel error 18.2 (atol 0.0001, rtol 0.001)"),
    _case("rewrite-unmatched",
          check(rewrite_zoo.hardswish_by_hand, ELEMENTWISE, rewrites=["decompose-hardswish"]), 0,
          check(rewrite_zoo.hardswish, ELEMENTWISE, rewrites=["decompose-hardswish"]), 0,
          [{"severity": "warning", "subject": "decompose-hardswish"}],
          "rewrite decompose-hardswish matched no node"),
    _case("rewrite-unverified",
          check(rewrite_zoo.hardswish, ELEMENTWISE, rewrites=["decompose-hardswish"], numerics={"samples": 0}), 0,
          check(rewrite_zoo.hardswish, ELEMENTWISE, rewrites=["decompose-hardswish"]), 0,
          [{"severity": "warning"}],
          "rewrites decompose-hardswish applied but not verified: numerics.samples is 0 and no samples_file"),
    _case("task-metric",
          check(rewrite_zoo.hardswish, ELEMENTWISE, rewrites=["decompose-hardswish"],
                files={"task_metric.py": SAMPLES_METRIC}, metric=samples_metric(5)), 1,
          check(rewrite_zoo.hardswish, ELEMENTWISE, rewrites=["decompose-hardswish"],
                files={"task_metric.py": SAMPLES_METRIC}, metric=samples_metric(4)), 0,
          [{"severity": "error"}],
          "task metric: samples 4 < min 5"),
    _case("compiler-failed",  # the fake compiler crashes on a node named crash_me (tests/probe)
          check(renamed(tiny_with(), "mul0", "crash_me"), target=FAKE_PROBE), 1,
          check(tiny_with(), target=FAKE_PROBE), 0,
          [{"severity": "error"}],
          "fake-compiler 0.1 (fake1) crashed: the compiler process was killed by SIGSEGV (stage: build)"),
    _case("rank-adapter",
          inspect(lambda: matmul_2d(12), "rknn-rk3588-fused"), 0,
          inspect(probe_models.matmul_rank2, "rknn-rk3588-fused"), 0,
          [{"severity": "warning", "subject": "x", "evidence": "measured"}],
          "graph input x has rank 2: rknn-rk3588-fused adds a Reshape to rank 4 on CPU (dim -1 = 12 is not a "
          "multiple of 8)"),
]

"""The rewrite catalog: graph surgery, names, exactness, docs."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
import pytest

from npu_gate.contract.spec import InputSpec
from npu_gate.model.samples import make_samples
from npu_gate.rewrites import REWRITES, apply, rewrites_markdown
from npu_gate.rewrites.base import Emitted, GraphView, Match
from npu_gate.rewrites.verify import Check, verify
from tests.helpers import rewrite_zoo as zoo
from tests.helpers.common import REPO, RunCli, export_net


def samples(count: int = 4, lo: float = -3.0, hi: float = 3.0, name: str = "x",
            shape: list[int] | None = None) -> list[dict[str, np.ndarray]]:
    """The contract's seeded samples (npu_gate.samples) for one input in [lo, hi]."""
    return make_samples([InputSpec(name, shape or zoo.SHAPE, "float32", None, (lo, hi))], count, seed=0)


def ops(model: onnx.ModelProto) -> Counter[str]:
    return Counter(n.op_type for n in model.graph.node)


def err(check: Check) -> float:
    """The check's max abs error, which it must have measured."""
    assert check.max_abs_err is not None, check
    return check.max_abs_err


Build = Callable[[], onnx.ModelProto]  # a rewrite_zoo model builder


EXACT_CASES = [
    ("decompose-hardswish", zoo.hardswish, {"Conv": 2, "Add": 1, "Clip": 1, "Mul": 1, "Div": 1}),
    ("fuse-hardswish", zoo.hardswish_by_hand, {"Conv": 2, "HardSwish": 1}),
    ("fuse-hardswish", zoo.hardsigmoid_swish, {"Conv": 2, "HardSwish": 1, "ReduceMean": 1}),
    ("decompose-hardsigmoid", zoo.hardsigmoid_swish,
     {"Conv": 2, "Mul": 2, "Add": 1, "Clip": 1, "ReduceMean": 1}),
    ("decompose-layernorm", zoo.layernorm,
     {"ReduceMean": 2, "Sub": 1, "Pow": 1, "Add": 2, "Sqrt": 1, "Div": 1, "Mul": 1}),
    ("pad-reflect-to-slice-concat", zoo.reflect_pad, {"Slice": 4, "Concat": 2}),
]


@pytest.mark.parametrize(("name", "build", "census"), EXACT_CASES)
def test_exact_rewrites_within_1e6(name: str, build: Build, census: dict[str, int]) -> None:
    original = build()
    rewritten, applied = apply(original, [REWRITES[name]])
    onnx.checker.check_model(rewritten, full_check=True)
    assert dict(ops(rewritten)) == census
    assert len(applied) == 1 and applied[0].exact
    # fp32 rounding differs by a few ulps; the layers after the region can amplify them, so the
    # end-to-end check is relative as well. At the region itself: within 1e-6 absolute.
    result = verify(original, rewritten, applied, samples(), {}, (1e-6, 1e-6))
    assert [(c.kind, c.where) for c in result.checks] == [("output", "y")] + (
        [] if applied[0].output == "y" else [("region", applied[0].output)]) + (
        [("region", "y")] if applied[0].output == "y" else [])
    assert all(c.passed for c in result.checks), [c.max_abs_err for c in result.checks]
    assert max(err(c) for c in result.checks if c.kind == "region") <= 1e-6


@pytest.mark.parametrize(("axis", "bias", "opset"), [(-1, True, 17), (2, False, 17), (1, True, 18), (-3, False, 18)])
def test_layernorm_respects_axis_bias_and_opset(axis: int, bias: bool, opset: int) -> None:
    original = zoo.layernorm(axis, bias, opset)
    rewritten, applied = apply(original, [REWRITES["decompose-layernorm"]])
    onnx.checker.check_model(rewritten, full_check=True)
    reduce = [n for n in rewritten.graph.node if n.op_type == "ReduceMean"]
    axes = list(range(axis - 4 if axis >= 0 else axis, 0))
    if opset >= 18:
        by_name = {t.name: onnx.numpy_helper.to_array(t) for t in rewritten.graph.initializer}
        assert [list(by_name[n.input[1]]) for n in reduce] == [axes, axes]
    else:
        assert [list(n.attribute[0].ints) for n in reduce] == [axes, axes]
    assert ops(rewritten)["Add"] == (2 if bias else 1)
    checks = verify(original, rewritten, applied, samples(), {}, (1e-5, 0.0)).checks
    assert all(c.passed for c in checks), [c.max_abs_err for c in checks]


def test_layernorm_on_float16_normalises_in_stash_type_as_onnx_defines_it() -> None:
    """LayerNormalization computes mean and variance in stash_type (float32 by default): the
    decomposition computed them in float16, where (x - mean)**2 overflows past 255. onnxruntime's
    CPU runs float16 Pow in float32, so only the graph shows it."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal(8).astype(np.float16), n) for n in ("scale", "bias")]
    node = helper.make_node("LayerNormalization", ["x", "scale", "bias"], ["y"], name="ln", epsilon=1e-3)
    graph = helper.make_graph([node], "ln16", [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [2, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [2, 8])], initializer=inits)
    original = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    rewritten, _ = apply(original, [REWRITES["decompose-layernorm"]])
    onnx.checker.check_model(rewritten, full_check=True)
    assert [n.op_type for n in rewritten.graph.node] == [
        "Cast", "ReduceMean", "Sub", "Pow", "ReduceMean", "Add", "Sqrt", "Div", "Cast", "Mul", "Add"]
    casts = [n for n in rewritten.graph.node if n.op_type == "Cast"]
    assert [n.attribute[0].i for n in casts] == [TensorProto.FLOAT, TensorProto.FLOAT16]
    assert {t.name: t.data_type for t in rewritten.graph.initializer if "decomposed" in t.name} == {
        "ln/decomposed/two": TensorProto.FLOAT, "ln/decomposed/epsilon": TensorProto.FLOAT}
    # stash_type given as the input's own type: computed in float16, no Cast
    original.graph.node[0].attribute.append(helper.make_attribute("stash_type", TensorProto.FLOAT16))
    rewritten, _ = apply(original, [REWRITES["decompose-layernorm"]])
    assert "Cast" not in ops(rewritten)


def test_fuse_inverts_decompose() -> None:
    original = zoo.hardswish()
    decomposed, _ = apply(original, [REWRITES["decompose-hardswish"]])
    fused, applied = apply(decomposed, [REWRITES["fuse-hardswish"]])
    assert ops(fused) == ops(original)
    assert {t.name for t in fused.graph.initializer} == {t.name for t in original.graph.initializer}
    assert applied[0].replaced == [("hswish/decomposed/Add", "Add"), ("hswish/decomposed/Clip", "Clip"),
                                   ("hswish/decomposed/Mul", "Mul"), ("hswish/decomposed/Div", "Div")]


def test_emitted_names_derive_from_the_original_node() -> None:
    _, applied = apply(zoo.hardswish(), [REWRITES["decompose-hardswish"]])
    assert applied[0].anchor == "hswish"
    assert applied[0].emitted == [("hswish/decomposed/Add", "Add"), ("hswish/decomposed/Clip", "Clip"),
                                  ("hswish/decomposed/Mul", "Mul"), ("hswish/decomposed/Div", "Div")]
    _, fused = apply(zoo.hardswish_by_hand(), [REWRITES["fuse-hardswish"]])
    assert fused[0].emitted == [("/act/Clip/fused/HardSwish", "HardSwish")]


def test_hardsigmoid_uses_the_nodes_alpha_and_the_onnx_default() -> None:
    for alpha, expected in ((1 / 6, 1 / 6), (None, 0.2)):
        rewritten, _ = apply(zoo.hardsigmoid_swish(alpha), [REWRITES["decompose-hardsigmoid"]])
        by_name = {t.name: float(onnx.numpy_helper.to_array(t)) for t in rewritten.graph.initializer
                   if t.name.endswith("/alpha")}
        assert by_name == {"/act/HardSigmoid/decomposed/alpha": pytest.approx(expected)}


def test_fuse_leaves_other_hardsigmoids_alone() -> None:
    # ONNX default alpha 0.2 is not HardSwish's 1/6: no match, nothing changes.
    rewritten, applied = apply(zoo.hardsigmoid_swish(None), [REWRITES["fuse-hardswish"]])
    assert applied == [] and ops(rewritten) == ops(zoo.hardsigmoid_swish(None))


@pytest.mark.parametrize("build", [zoo.gelu_op, zoo.gelu_erf])
def test_gelu_tanh_is_approximate_and_its_error_is_measured(build: Build) -> None:
    original = build()
    rewritten, applied = apply(original, [REWRITES["gelu-tanh"]])
    assert not applied[0].exact
    assert ops(rewritten) == Counter({"Mul": 6, "Add": 2, "Tanh": 1})
    checks = verify(original, rewritten, applied, samples(), {}, (1e-4, 0.0)).checks
    # The tanh form is off by ~4.7e-4 near |x| = 2: beyond 1e-4, within 1e-3, and reported.
    assert [c.passed for c in checks] == [False, False]
    assert 3e-4 < err(checks[0]) < 1e-3


def test_no_match_returns_an_equal_copy() -> None:
    original = zoo.reflect_pad()
    rewritten, applied = apply(original, [REWRITES["decompose-hardswish"]])
    assert applied == [] and rewritten == original and rewritten is not original


def test_rewrite_docs_are_up_to_date(run_cli: RunCli) -> None:
    run = run_cli("rewrites", "--format", "markdown")
    assert run.code == 0
    assert run.out == (REPO / "docs" / "rewrites.md").read_text() == rewrites_markdown(), \
        "regenerate: npu-gate rewrites --format markdown > docs/rewrites.md"


def test_rewrites_command_lists_the_catalog(run_cli: RunCli) -> None:
    run = run_cli("rewrites")
    names = [line.split()[0] for line in run.out.splitlines()]
    assert names == ["decompose-hardswish", "fuse-hardswish", "decompose-hardsigmoid", "gelu-tanh",
                     "decompose-layernorm", "pad-reflect-to-slice-concat"]
    assert "gelu-tanh                    approx" in run.out


EXPORTED_NET = '''
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(8)
        self.pad = nn.ReflectionPad2d((1, 2, 1, 0))

    def forward(self, x):
        return (nn.functional.gelu(x), nn.functional.hardswish(x), nn.functional.hardsigmoid(x) * x,
                self.ln(x), self.pad(x))
'''


@pytest.mark.torch
@pytest.mark.parametrize(("dynamo", "opset"), [(False, 17), (True, 18), (True, 20)])
@pytest.mark.slow
def test_catalog_matches_what_the_exporters_write(tmp_path: Path, dynamo: bool, opset: int) -> None:
    path = export_net(EXPORTED_NET, tmp_path / "net.onnx", dynamo=dynamo, opset=opset)
    original = onnx.load(str(path))
    names = ["decompose-hardswish", "decompose-hardsigmoid", "gelu-tanh", "decompose-layernorm",
             "pad-reflect-to-slice-concat"]
    rewritten, applied = apply(original, [REWRITES[n] for n in names])
    onnx.checker.check_model(rewritten, full_check=True)
    assert [a.rewrite for a in applied] == names  # TorchScript's computed Pad pads included
    left = ops(rewritten)
    assert not {"HardSwish", "HardSigmoid", "Gelu", "Erf", "LayerNormalization", "Pad", "ConstantOfShape"} & set(left)
    assert left["Constant"] == 0 and left["Transpose"] == 0  # the pads chain went with the Pad
    inputs = samples(lo=-4, hi=4, name=original.graph.input[0].name, shape=[1, 4, 8, 8])
    checks = verify(original, rewritten, applied, inputs, {"gelu-tanh": (1e-3, 0.0)}, (1e-5, 1e-5)).checks
    assert all(c.passed for c in checks), [(c.where, c.max_abs_err) for c in checks]
    gelu = [c for c in checks if c.rewrite == "gelu-tanh"]
    assert len(gelu) == 1 and 1e-4 < err(gelu[0]) < 1e-3


def test_each_region_is_judged_on_its_own_error() -> None:
    """A wrong rewrite upstream must not make an exact one downstream look wrong."""
    c0, i0 = zoo.conv("conv0", "x", "a", seed=1)
    c1, i1 = zoo.conv("conv1", "h", "b", seed=2)
    nodes = [c0,
             onnx.helper.make_node("HardSigmoid", ["a"], ["g"], name="hsig", alpha=1 / 6),
             onnx.helper.make_node("Mul", ["a", "g"], ["h"], name="mul"),
             c1,
             onnx.helper.make_node("HardSwish", ["b"], ["y"], name="hswish")]
    original = zoo.model(nodes, i0 + i1)

    def wrong_alpha(view: GraphView, m: Match) -> Emitted:
        from npu_gate.rewrites.base import Builder

        b = Builder(view, m.anchor, "decomposed")
        scaled = b.op("Mul", [m.params["x"], b.const("alpha", 0.2)])  # ONNX's default, not the node's
        b.clip(b.op("Add", [scaled, b.const("beta", 0.5)]), 0.0, 1.0, m.output)
        return b.done()

    right = REWRITES["decompose-hardsigmoid"]
    wrong = type(right)(right.name, right.matches, right.emits, True, right.doc, right.find, wrong_alpha)
    rewritten, applied = apply(original, [wrong, REWRITES["decompose-hardswish"]])
    checks = {(c.kind, c.where): c for c in verify(original, rewritten, applied, samples(), {}, (1e-5, 1e-5)).checks}
    assert checks[("region", "g")].passed is False and err(checks[("region", "g")]) > 0.05
    assert checks[("region", "y")].passed is True and err(checks[("region", "y")]) <= 1e-6
    assert checks[("output", "y")].passed is False  # end to end the drift shows, attributed upstream


def _by_hand(order: str) -> onnx.ModelProto:
    """x·Clip(x+3, 0, 6)/6 in the orders exporters and people write it."""
    h = onnx.helper
    add = h.make_node("Add", ["three", "x"], ["s"], name="add")  # constant first
    clip = h.make_node("Clip", ["s", "zero", "six"], ["g"], name="clip")
    if order == "x*clip/6":
        tail = [h.make_node("Mul", ["g", "x"], ["p"], name="mul"), h.make_node("Div", ["p", "six"], ["y"], name="div")]
    elif order == "x*clip*(1/6)":
        tail = [h.make_node("Mul", ["x", "g"], ["p"], name="mul"), h.make_node("Mul", ["p", "sixth"], ["y"], name="m6")]
    else:  # x*(clip/6)
        tail = [h.make_node("Div", ["g", "six"], ["q"], name="div"), h.make_node("Mul", ["x", "q"], ["y"], name="mul")]
    inits = [zoo.init("three", 3.0), zoo.init("zero", 0.0), zoo.init("six", 6.0)]
    if order == "x*clip*(1/6)":
        inits.append(zoo.init("sixth", 1 / 6))
    return zoo.model([add, clip, *tail], inits)


@pytest.mark.parametrize("order", ["x*clip/6", "x*clip*(1/6)", "x*(clip/6)"])
def test_fuse_hardswish_matches_every_order(order: str) -> None:
    original = _by_hand(order)
    fused, applied = apply(original, [REWRITES["fuse-hardswish"]])
    assert ops(fused) == Counter({"HardSwish": 1}) and len(fused.graph.initializer) == 0
    checks = verify(original, fused, applied, samples(lo=-5, hi=5), {}, (1e-6, 1e-6)).checks
    assert all(c.passed for c in checks)


def test_fuse_hardswish_leaves_shared_intermediates_alone() -> None:
    model = _by_hand("x*clip/6")
    model.graph.output.append(onnx.helper.make_tensor_value_info("g", onnx.TensorProto.FLOAT, zoo.SHAPE))
    _, applied = apply(model, [REWRITES["fuse-hardswish"]])
    assert applied == []  # the Clip output is used elsewhere: fusing would drop it


@pytest.mark.parametrize(("name", "build", "constant"), [
    ("fuse-hardswish", lambda: _by_hand("x*clip/6"), "three"),
    ("fuse-hardswish", lambda: _by_hand("x*clip*(1/6)"), "sixth"),
    ("gelu-tanh", zoo.gelu_erf, "one"),
    ("gelu-tanh", zoo.gelu_erf, "half"),
])
def test_a_constant_that_broadcasts_the_rank_up_is_not_matched(name: str, build: Build, constant: str) -> None:
    """x + [[[[[3]]]]] has rank 5: HardSwish(x) or the tanh form would drop that shape."""
    model = build()
    [init] = [t for t in model.graph.initializer if t.name == constant]
    init.CopyFrom(zoo.init(constant, onnx.numpy_helper.to_array(init).reshape([1] * 5)))
    del model.graph.output[:]
    model.graph.output.append(onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, *zoo.SHAPE]))
    onnx.checker.check_model(model, full_check=True)
    assert apply(model, [REWRITES[name]])[1] == []


def test_fuse_hardswish_leaves_an_intermediate_a_subgraph_reads_alone() -> None:
    """An If body reading the Clip output consumes it too: fusing would leave the body
    reading a tensor no node produces (an invalid graph)."""
    h = onnx.helper
    model = _by_hand("x*clip/6")
    body = [h.make_graph([h.make_node("Identity", [read], [out], name=f"{out}/Identity")], out, [],
                         [h.make_tensor_value_info(out, onnx.TensorProto.FLOAT, zoo.SHAPE)])
            for read, out in (("g", "then_out"), ("x", "else_out"))]
    model.graph.initializer.append(zoo.init("cond", True, np.bool_))
    model.graph.node.append(h.make_node("If", ["cond"], ["w"], name="if", then_branch=body[0], else_branch=body[1]))
    model.graph.output.append(h.make_tensor_value_info("w", onnx.TensorProto.FLOAT, zoo.SHAPE))
    onnx.checker.check_model(model, full_check=True)
    rewritten, applied = apply(model, [REWRITES["fuse-hardswish"]])
    assert applied == []
    onnx.checker.check_model(rewritten, full_check=True)


def test_reflect_pad_with_axes_input_and_crops() -> None:
    h = onnx.helper
    node = h.make_node("Pad", ["x", "pads", "", "axes"], ["y"], name="pad", mode="reflect")
    inits = [zoo.init("pads", [2, 0, 1, 3], np.int64), zoo.init("axes", [-1, 1], np.int64)]
    original = zoo.model([node], inits, out_shape=[1, 7, 6, 9], opset=18)
    rewritten, applied = apply(original, [REWRITES["pad-reflect-to-slice-concat"]])
    assert ops(rewritten) == Counter({"Slice": 3, "Concat": 2})
    assert all(c.passed for c in verify(original, rewritten, applied, samples(), {}, (0.0, 0.0)).checks)
    crop = zoo.model([h.make_node("Pad", ["x", "pads"], ["y"], name="pad", mode="reflect")],
                     [zoo.init("pads", [0, 0, -1, 0, 0, 0, 0, 0], np.int64)], out_shape=[1, 4, 5, 6])
    assert apply(crop, [REWRITES["pad-reflect-to-slice-concat"]])[1] == []  # negative pads: no match


@pytest.mark.parametrize(("opset", "matched"), [(9, False), (10, True)])
def test_reflect_pad_needs_the_slice_of_opset_10(opset: int, matched: bool) -> None:
    """Before opset 10 Slice has no steps input: the reversed slices cannot be written."""
    node = onnx.helper.make_node("Pad", ["x"], ["y"], name="pad", mode="reflect", pads=[0, 0, 1, 2, 0, 0, 2, 1])
    original = zoo.model([node], [], out_shape=[1, 4, 9, 9], opset=opset)
    rewritten, applied = apply(original, [REWRITES["pad-reflect-to-slice-concat"]])
    assert len(applied) == int(matched)
    onnx.checker.check_model(rewritten, full_check=True)

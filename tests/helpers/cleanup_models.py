"""Small hand-built models for the compiler's clean-up (profile ``eliminates``/``lowers``) and
its refusals (``refuses``): the probe cases docs/rknn.md names (its section on the compiler's clean-up),
each checked against RKNN-Toolkit2 2.5.0 (tests/probe/test_probe_rknn.py re-measures them)."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SHAPE = [1, 8, 16, 16]


def _conv(name: str, x: str, y: str) -> tuple[onnx.NodeProto, onnx.TensorProto]:
    rng = np.random.default_rng(len(name))
    w = numpy_helper.from_array(rng.random((8, 8, 3, 3), dtype=np.float32), f"{name}_w")
    return helper.make_node("Conv", [x, f"{name}_w"], [y], name=name, pads=[1, 1, 1, 1]), w


def _model(nodes: list[onnx.NodeProto], inits: list[onnx.TensorProto], out: str = "r", out_shape: list[int] = SHAPE,
           opset: int = 13, inputs: list[onnx.ValueInfoProto] | None = None, ir: int = 8) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", inputs or [helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE)],
                              [helper.make_tensor_value_info(out, TensorProto.FLOAT, out_shape)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = ir
    return model


def elim1() -> onnx.ModelProto:
    """Conv, Identity, Cast float->float, Dropout, Conv; a 3-input Sum with two more; Relu."""
    c1, w1 = _conv("c1", "x", "a")
    c2, w2 = _conv("c2", "d", "e")
    c3, w3 = _conv("c3", "x", "f")
    node = helper.make_node
    return _model([c1, node("Identity", ["a"], ["b"], name="id"),
                   node("Cast", ["b"], ["cc"], name="cast", to=TensorProto.FLOAT),
                   node("Dropout", ["cc"], ["d"], name="drop"), c2, c3,
                   node("Sum", ["e", "f", "a"], ["s"], name="sum"), node("Relu", ["s"], ["r"], name="relu")],
                  [w1, w2, w3])


def elim2() -> onnx.ModelProto:
    """Conv, Flatten/Reshape/Reshape back to its shape, Conv, Unsqueeze+Squeeze, a Transpose pair that undoes itself."""
    c1, w1 = _conv("c1", "x", "a")
    c2, w2 = _conv("c2", "r2", "b")
    consts = [numpy_helper.from_array(np.array(v, np.int64), n)
              for n, v in (("s1", [1, 8, 256]), ("s2", SHAPE), ("ax", [0]))]
    node = helper.make_node
    return _model([c1, node("Flatten", ["a"], ["fl"], name="flat", axis=1),
                   node("Reshape", ["fl", "s1"], ["r1"], name="resh1"),
                   node("Reshape", ["r1", "s2"], ["r2"], name="resh2"), c2,
                   node("Unsqueeze", ["b", "ax"], ["u"], name="unsq"), node("Squeeze", ["u", "ax"], ["sq"], name="sq"),
                   node("Transpose", ["sq"], ["t1"], name="t1", perm=[0, 2, 3, 1]),
                   node("Transpose", ["t1"], ["t2"], name="t2", perm=[0, 3, 1, 2]),
                   node("Relu", ["t2"], ["r"], name="relu")], [w1, w2, *consts])


def cast2() -> onnx.ModelProto:
    """Conv, Cast to int32 and back: not a no-op, nothing eliminated."""
    c1, w1 = _conv("c1", "x", "a")
    node = helper.make_node
    return _model([c1, node("Cast", ["a"], ["i"], name="c_i", to=TensorProto.INT32),
                   node("Cast", ["i"], ["f"], name="c_f", to=TensorProto.FLOAT),
                   node("Relu", ["f"], ["r"], name="relu")],
                  [w1])


def drop9(mask: bool = False) -> onnx.ModelProto:
    c1, w1 = _conv("c1", "x", "a")
    node = helper.make_node
    return _model([c1, node("Dropout", ["a"], ["d", "mask"] if mask else ["d"], name="drop", ratio=0.5),
                   node("Relu", ["d"], ["r"], name="relu")], [w1], opset=9)


def dql() -> onnx.ModelProto:
    node = helper.make_node
    return _model([node("DynamicQuantizeLinear", ["x"], ["q", "sc", "zp"], name="dq"),
                   node("DequantizeLinear", ["q", "sc", "zp"], ["r"], name="deq")], [])


def opset21() -> onnx.ModelProto:
    c1, w1 = _conv("c1", "x", "a")
    return _model([c1, helper.make_node("Relu", ["a"], ["r"], name="relu")], [w1], opset=21, ir=10)


def cubic() -> onnx.ModelProto:
    c1, w1 = _conv("c1", "x", "a")
    scales = numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "sc")
    return _model([c1, helper.make_node("Resize", ["a", "", "sc"], ["r"], name="rs", mode="cubic")], [w1, scales],
                  out_shape=[1, 8, 32, 32])


def if_runtime() -> onnx.ModelProto:
    """An If whose condition is computed from the input; input y is read only inside its branches."""
    c1, w1 = _conv("c1", "x", "a")

    def out(n: str) -> list[onnx.ValueInfoProto]:
        return [helper.make_tensor_value_info(n, TensorProto.FLOAT, SHAPE)]

    then_g = helper.make_graph([helper.make_node("Relu", ["y"], ["o1"], name="tr")], "then", [], out("o1"))
    else_g = helper.make_graph([helper.make_node("Sigmoid", ["y"], ["o2"], name="es")], "else", [], out("o2"))
    zero = numpy_helper.from_array(np.array(0, np.float32), "zero")
    node = helper.make_node
    return _model([c1, node("ReduceSum", ["a"], ["s"], name="rs", keepdims=0),
                   node("Greater", ["s", "zero"], ["cond"], name="gt"),
                   node("If", ["cond"], ["iy"], name="if", then_branch=then_g, else_branch=else_g),
                   node("Add", ["a", "iy"], ["r"], name="add")], [w1, zero],
                  inputs=[helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE),
                          helper.make_tensor_value_info("y", TensorProto.FLOAT, SHAPE)])


def flat_gemm() -> onnx.ModelProto:
    """Conv, GlobalAveragePool, Flatten, Gemm: a classifier head."""
    c1, w1 = _conv("c1", "x", "a")
    rng = np.random.default_rng(3)
    w = numpy_helper.from_array(rng.random((10, 8), dtype=np.float32), "fc_w")
    b = numpy_helper.from_array(rng.random(10, dtype=np.float32), "fc_b")
    node = helper.make_node
    return _model([c1, node("GlobalAveragePool", ["a"], ["p"], name="gap"),
                   node("Flatten", ["p"], ["fl"], name="flat", axis=1),
                   node("Gemm", ["fl", "fc_w", "fc_b"], ["r"], name="fc", transB=1)], [w1, w, b], out_shape=[1, 10])


def shuffle() -> onnx.ModelProto:
    """Conv, then a channel shuffle: Reshape [1, 2, 4, 16, 16], Transpose (0, 2, 1, 3, 4), Reshape back; Relu."""
    c1, w1 = _conv("c1", "x", "a")
    consts = [numpy_helper.from_array(np.array(v, np.int64), n) for n, v in (("g", [1, 2, 4, 16, 16]), ("s", SHAPE))]
    node = helper.make_node
    return _model([c1, node("Reshape", ["a", "g"], ["r1"], name="split"),
                   node("Transpose", ["r1"], ["t"], name="swap", perm=[0, 2, 1, 3, 4]),
                   node("Reshape", ["t", "s"], ["r2"], name="merge"), node("Relu", ["r2"], ["r"], name="relu")],
                  [w1, *consts])


def _const(name: str, value: object, shape: list[int] | None = None) -> onnx.TensorProto:
    array = np.asarray(value, np.float32)
    return numpy_helper.from_array(array if shape is None else np.broadcast_to(array, shape).copy(), name)


def _bn(name: str, x: str, y: str, identity: bool) -> tuple[onnx.NodeProto, list[onnx.TensorProto]]:
    """A BatchNormalization over 8 channels: an identity one (1, 0, 0, 1, as random-init torchvision
    nets have) or one with other parameters."""
    values = (1, 0, 0, 1) if identity else (0.5, 0.1, 0.2, 2.0)
    params = [_const(f"{name}_{k}", v, [8]) for k, v in zip("sbmv", values, strict=True)]
    return helper.make_node("BatchNormalization", [x, *(t.name for t in params)], [y], name=name), params


def dense() -> onnx.ModelProto:
    """A DenseNet-like block: Concat of one input, identity BatchNormalization, Relu, Conv, a
    BatchNormalization the Conv's output feeds alone, Relu, Concat of two, identity BN, Mul by 1, Conv."""
    c1, w1 = _conv("c1", "x", "a")
    c2, w2 = _conv("c2", "r1", "b")
    node = helper.make_node
    bn1, p1 = _bn("bn1", "k1", "n1", True)
    bn2, p2 = _bn("bn2", "b", "n2", False)
    bn3 = node("BatchNormalization", ["k2", "bn3_s", "bn3_b", "bn3_m", "bn3_v"], ["n3"], name="bn3")
    p3 = [_const(f"bn3_{k}", v, [16]) for k, v in zip("sbmv", (1, 0, 0, 1), strict=True)]
    w3 = numpy_helper.from_array(np.random.default_rng(3).random((8, 16, 1, 1), dtype=np.float32), "c3_w")
    return _model([c1, node("Concat", ["a"], ["k1"], name="cat1", axis=1), bn1,
                   node("Relu", ["n1"], ["r1"], name="relu1"), c2, bn2, node("Relu", ["n2"], ["r2"], name="relu2"),
                   node("Concat", ["a", "r2"], ["k2"], name="cat2", axis=1), bn3,
                   node("Mul", ["n3", "one"], ["m"], name="mul1"),
                   node("Conv", ["m", "c3_w"], ["r"], name="c3")],
                  [w1, w2, *p1, *p2, *p3, _const("one", [1.0]), w3])


def bn_eps(epsilon: float = 0.1) -> onnx.ModelProto:
    """Relu -> identity BatchNormalization of ``epsilon`` (removed by RKNN as it is: not a no-op)
    -> Conv -> identity BatchNormalization of ``epsilon`` (folded into the Conv: exact) -> Relu ->
    identity BatchNormalization of the default epsilon 1e-5 -> Relu."""
    c1, w1 = _conv("c1", "n1", "a")
    node = helper.make_node
    bn1, p1 = _bn("bn1", "r0", "n1", True)
    bn2, p2 = _bn("bn2", "a", "n2", True)
    bn3, p3 = _bn("bn3", "r2", "n3", True)
    for bn in (bn1, bn2):
        bn.attribute.append(helper.make_attribute("epsilon", epsilon))
    return _model([node("Relu", ["x"], ["r0"], name="relu0"), bn1, c1, bn2, node("Relu", ["n2"], ["r2"], name="relu2"),
                   bn3, node("Relu", ["n3"], ["r"], name="relu3")], [*p1, w1, *p2, *p3])


def mulconv() -> onnx.ModelProto:
    """Conv -> Mul by a scalar (folded into the Conv) -> Relu; Conv -> Mul by a full tensor of random
    values (kept; a tensor of one repeated value is folded like a scalar) -> Relu."""
    c1, w1 = _conv("c1", "x", "a")
    c2, w2 = _conv("c2", "r1", "b")
    node = helper.make_node
    return _model([c1, node("Mul", ["a", "k"], ["m1"], name="mul_scalar"), node("Relu", ["m1"], ["r1"], name="relu1"),
                   c2, node("Mul", ["b", "full"], ["m2"], name="mul_tensor"), node("Relu", ["m2"], ["r"], name="relu")],
                  [w1, w2, _const("k", [1.38]),
                   numpy_helper.from_array(np.random.default_rng(5).random(SHAPE, dtype=np.float32), "full")])


def half() -> onnx.ModelProto:
    """Conv -> Cast to float16 -> Relu -> Cast to float32 -> Sigmoid: casts a float16 build drops
    (a Relu there instead of the Sigmoid is dropped too, remove_invalid_relu, which no entry models)."""
    c1, w1 = _conv("c1", "x", "a")
    node = helper.make_node
    return _model([c1, node("Cast", ["a"], ["h"], name="to_half", to=TensorProto.FLOAT16),
                   node("Relu", ["h"], ["rh"], name="relu_half"),
                   node("Cast", ["rh"], ["f"], name="to_float", to=TensorProto.FLOAT),
                   node("Sigmoid", ["f"], ["r"], name="sigmoid")], [w1])


# --- issue 20's folds (rknn-cleanup2): a Reshape merged into its Transpose, paddle2onnx's Conv bias
# Add and the scalar Mul / Add after it, all measured in standard-int8's folding families --------


def paddle_affine() -> onnx.ModelProto:
    """paddle2onnx's PP-LCNet block (PP-OCRv5/v6): Conv -> Add of a [1,C,1,1] bias -> Identity ->
    Mul by a one-element scale (the constant first) -> Identity -> Add of a one-element shift ->
    Identity -> HardSwish -> Mul, Add by one-element constants (after the HardSwish: not folded)
    -> Conv -> Relu."""
    c1, w1 = _conv("c1", "x", "a")
    c2, w2 = _conv("c2", "i5", "c")
    node = helper.make_node
    chain = [("Add", ["a", "bias_b"], "bias"), ("Mul", ["k1", "i0"], "mul1"), ("Add", ["i1", "k2"], "add1"),
             ("HardSwish", ["i2"], "hswish"), ("Mul", ["k3", "hs"], "mul2"), ("Add", ["i4", "k4"], "add2")]
    nodes = [c1]
    for i, (op, inputs, name) in enumerate(chain):
        if op == "HardSwish":
            nodes.append(node(op, inputs, ["hs"], name=name))
            continue
        nodes += [node(op, inputs, [f"o{i}"], name=name), node("Identity", [f"o{i}"], [f"i{i}"], name=f"id{i}")]
    nodes += [c2, node("Relu", ["c"], ["r"], name="relu")]
    bias = numpy_helper.from_array(np.random.default_rng(3).random((1, 8, 1, 1), dtype=np.float32), "bias_b")
    return _model(nodes, [w1, w2, bias, _const("k1", [0.618]), _const("k2", [0.188]), _const("k3", [1.2]),
                          _const("k4", [-0.05])])


def reshape_transpose() -> onnx.ModelProto:
    """PP-PicoDet's head on a 6x6 map: Conv -> Reshape to [1,8,36] -> Transpose [0,2,1] (merged into
    the Transpose) -> Relu; and Conv -> Reshape to [1,288] -> Transpose [1,0] (a reshape itself: the
    Reshape stays) -> Relu."""
    shape = [1, 8, 6, 6]
    c1, w1 = _conv("c1", "x", "a")
    node = helper.make_node
    consts = [numpy_helper.from_array(np.array(v, np.int64), n) for n, v in (("s3", [1, 8, 36]), ("s2", [1, 288]))]
    graph = helper.make_graph(
        [c1, node("Reshape", ["a", "s3"], ["r3"], name="head_resh"),
         node("Transpose", ["r3"], ["t3"], name="head_swap", perm=[0, 2, 1]),
         node("Relu", ["t3"], ["y3"], name="relu3"),
         node("Reshape", ["a", "s2"], ["r2"], name="row_resh"),
         node("Transpose", ["r2"], ["t2"], name="row_swap", perm=[1, 0]), node("Relu", ["t2"], ["y2"], name="relu2")],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y3", TensorProto.FLOAT, [1, 36, 8]),
         helper.make_tensor_value_info("y2", TensorProto.FLOAT, [288, 1])], [w1, *consts])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def attention(qdq_in: bool = True, qdq_softmax: tuple[bool, bool] = (True, True), qdq_out: bool = True,
              zero_point: type = np.uint8) -> onnx.ModelProto:
    """q [1, 2, 16, 8] @ k [1, 2, 8, 16] -> Softmax -> @ v [1, 2, 16, 8] (Smart Turn v3.2's attention, reduced),
    with a QuantizeLinear -> DequantizeLinear pair on the three inputs (qdq_in), before and after the Softmax
    (qdq_softmax) and on the output (qdq_out); where a pair is left out, the tensor passes through an Identity."""
    dims = {"q": [1, 2, 16, 8], "k": [1, 2, 8, 16], "v": [1, 2, 16, 8]}
    nodes: list[onnx.NodeProto] = []
    inits: list[onnx.TensorProto] = []
    node = helper.make_node

    def pair(x: str, y: str, on: bool, scale: float) -> None:
        if not on:
            nodes.append(node("Identity", [x], [y], name=f"{y}_id"))
            return
        zero = 128 if zero_point is np.uint8 else 0
        inits.extend([numpy_helper.from_array(np.array(scale, np.float32), f"{y}_s"),
                      numpy_helper.from_array(np.array(zero, zero_point), f"{y}_z")])
        nodes.extend([node("QuantizeLinear", [x, f"{y}_s", f"{y}_z"], [f"{y}_q"], name=f"{y}_Q"),
                      node("DequantizeLinear", [f"{y}_q", f"{y}_s", f"{y}_z"], [y], name=f"{y}_DQ")])

    for t in dims:
        pair(t, f"{t}d", qdq_in, 0.05)
    nodes.append(node("MatMul", ["qd", "kd"], ["s"], name="mm1"))
    pair("s", "sd", qdq_softmax[0], 0.2)
    nodes.append(node("Softmax", ["sd"], ["p"], name="sm", axis=-1))
    pair("p", "pd", qdq_softmax[1], 0.004)
    nodes.append(node("MatMul", ["pd", "vd"], ["o"], name="mm2"))
    pair("o", "r", qdq_out, 0.05)
    return _model(nodes, inits, out_shape=[1, 2, 16, 8],
                  inputs=[helper.make_tensor_value_info(t, TensorProto.FLOAT, d) for t, d in dims.items()])


def qdq_conv() -> onnx.ModelProto:
    """A QDQ Conv: the input through a uint8 QuantizeLinear -> DequantizeLinear pair, int8 weights dequantized,
    the output through a pair again (a QDQ model without an attention: it builds)."""
    node = helper.make_node
    rng = np.random.default_rng(5)
    inits = [numpy_helper.from_array(rng.integers(-100, 100, (8, 8, 3, 3)).astype(np.int8), "wq"),
             numpy_helper.from_array(np.array(0.01, np.float32), "ws"),
             numpy_helper.from_array(np.array(0, np.int8), "wz"),
             numpy_helper.from_array(np.zeros(8, np.float32), "b")]
    nodes = [node("DequantizeLinear", ["wq", "ws", "wz"], ["w"], name="w_DQ")]
    for x, y in (("x", "xd"), ("y", "r")):
        inits += [numpy_helper.from_array(np.array(0.05, np.float32), f"{y}_s"),
                  numpy_helper.from_array(np.array(128, np.uint8), f"{y}_z")]
        pair = [node("QuantizeLinear", [x, f"{y}_s", f"{y}_z"], [f"{y}_q"], name=f"{y}_Q"),
                node("DequantizeLinear", [f"{y}_q", f"{y}_s", f"{y}_z"], [y], name=f"{y}_DQ")]
        nodes += pair if x == "x" else [node("Conv", ["xd", "w", "b"], ["y"], name="c1", pads=[1, 1, 1, 1]), *pair]
    return _model(nodes, inits)


def stacked_octaves(order: str = "export", through: tuple[int, ...] = (2, 1, 0),
                    tail: str = "transpose") -> onnx.ModelProto:
    """basic-pitch's CQT tail in small (docs/rknn.md, basic-pitch): three tf.stack pairs of
    Transpose(0,2,3,1) -> Reshape[-1,172,36] -> Unsqueeze(3) paths (``through``, oldest stack first: how
    many of each stack's two paths go through the Transpose; by default the oldest both, the next one,
    the newest none), a chain of axis-2 Concats that puts each newer stack before an older part (the
    oldest a graph input), a Slice of the last 309 of the 324 rows and ``tail``: a Transpose(0,2,1,3) or
    a Relu. ``order``: "export" lists every path first, oldest first, then the stacks newest first
    (tf2onnx's order); "oldest" the stacks oldest first; "interleaved" puts each stack right after its
    own paths, oldest first. The same graph in each order."""
    node = helper.make_node
    inits = [numpy_helper.from_array(np.array(v, np.int64), n) for n, v in (
        ("rows", [-1, 172, 36]), ("ax3", [3]), ("st", [0, -309, 0, 0]), ("en", [2**31 - 1] * 4), ("ax", [0, 2, 1, 3]))]
    newest_first = (0, 1, 2)
    oldest_first = (2, 1, 0)
    transposed = {k: through[i] for i, k in enumerate(oldest_first)}  # stack -> its paths through a Transpose
    inputs, paths, stacks = [], {}, {}
    for k in oldest_first:
        for j in (0, 1):
            p = f"s{k}p{j}"
            if j < transposed[k]:
                inputs.append(helper.make_tensor_value_info(f"{p}_x", TensorProto.FLOAT, [1, 36, 1, 172]))
                paths[p] = [node("Transpose", [f"{p}_x"], [f"{p}_t"], name=f"{p}_tp", perm=[0, 2, 3, 1])]
            else:
                inputs.append(helper.make_tensor_value_info(f"{p}_t", TensorProto.FLOAT, [1, 1, 172, 36]))
                paths[p] = []
            paths[p].append(node("Reshape", [f"{p}_t", "rows"], [f"{p}_r"], name=f"{p}_rs"))
        stacks[k] = [node("Unsqueeze", [f"s{k}p{j}_r", "ax3"], [f"s{k}p{j}_u"], name=f"s{k}p{j}_un") for j in (0, 1)]
        stacks[k].append(node("Concat", [f"s{k}p1_u", f"s{k}p0_u"], [f"s{k}"], name=f"s{k}_cat", axis=3))
    inputs.append(helper.make_tensor_value_info("older", TensorProto.FLOAT, [1, 172, 216, 2]))
    chain, part = [], "older"
    for k in oldest_first:
        chain.append(node("Concat", [f"s{k}", part], [f"c{k}"], name=f"c{k}_cat", axis=2))
        part = f"c{k}"
    last = node("Transpose", ["sl"], ["r"], name="tp_out", perm=[0, 2, 1, 3]) if tail == "transpose" else \
        node("Relu", ["sl"], ["r"], name="relu_out")
    ends = [node("Slice", [part, "st", "en", "ax"], ["sl"], name="slice"), last]
    every_path = [n for k in oldest_first for j in (0, 1) for n in paths[f"s{k}p{j}"]]
    if order == "export":
        nodes = every_path + [n for k in newest_first for n in stacks[k]]
    elif order == "oldest":
        nodes = every_path + [n for k in oldest_first for n in stacks[k]]
    else:
        nodes = [n for k in oldest_first for n in paths[f"s{k}p0"] + paths[f"s{k}p1"] + stacks[k]]
    out_shape = [1, 309, 172, 2] if tail == "transpose" else [1, 172, 309, 2]
    return _model(nodes + chain + ends, inits, out_shape=out_shape, inputs=inputs)


def octave_cases() -> dict[str, tuple[str, tuple[int, ...], str]]:
    """The 162 node-order cases: name -> (order, through, tail), named ``{order}_{tail}_{through}``."""
    return {f"{order}_{tail}_{''.join(map(str, through))}": (order, through, tail)
            for order in ("export", "oldest", "interleaved") for tail in ("transpose", "relu")
            for through in itertools.product((0, 1, 2), repeat=3)}


def reordered(model: onnx.ModelProto, seed: int) -> onnx.ModelProto:
    """``model`` with its nodes in a random valid order (each node after the nodes it reads), drawn
    with ``random.Random(seed)``: the same graph, another file."""
    import random

    rng = random.Random(seed)
    nodes = list(model.graph.node)
    made_by = {o: i for i, n in enumerate(nodes) for o in n.output}
    needs = [{made_by[x] for x in n.input if x in made_by} for n in nodes]
    placed: list[int] = []
    while len(placed) < len(nodes):
        ready = [i for i in range(len(nodes)) if i not in placed and needs[i] <= set(placed)]
        placed.append(rng.choice(ready))
    out = onnx.ModelProto()
    out.CopyFrom(model)
    del out.graph.node[:]
    out.graph.node.extend(nodes[i] for i in placed)
    return out


def reordered_octaves() -> dict[str, onnx.ModelProto]:
    """48 random orders (6 seeds) of 8 Transpose-ended stack combinations: ``rand{seed}_{through}``."""
    combos = [(2, 2, 2), (2, 1, 0), (1, 2, 1), (0, 2, 2), (2, 2, 0), (1, 1, 1), (2, 0, 2), (1, 2, 2)]
    return {f"rand{seed}_{''.join(map(str, through))}": reordered(stacked_octaves("export", through), seed)
            for through in combos for seed in range(6)}


def flattened_head(levels: tuple[int, ...] = (40, 20, 10), channels: int = 82,
                   reader: str = "split") -> onnx.ModelProto:
    """A YOLO-style detection head in small (nudenet's, docs/rknn.md): one input [1, C, S0, S0] and a
    Relu, each next level a 2x2 MaxPool of the one before; per level the flattening Reshape to
    [1, C, S*S]; the Concat of the levels on the last axis, read by ``reader``: "split" (boxes and
    scores, C - 2 and 2 channels, a Sigmoid on the scores), "sigmoid" or "transpose" (perm 0, 2, 1).
    RKNN-Toolkit2 2.5.0 (real torch) moves the Reshapes past the Concat and flattens once after it,
    (1, C, H', w) -> (1, C, 1, total): with a Split or a Transpose reading the Concat that Reshape
    stands between them, placed like any Reshape (on the CPU unless the total is a multiple of 8)."""
    node = helper.make_node
    total = sum(s * s for s in levels)
    nodes = [node("Relu", ["x"], [f"a{levels[0]}"], name="relu")]
    nodes += [node("MaxPool", [f"a{before}"], [f"a{s}"], name=f"pool{s}", kernel_shape=[2, 2], strides=[2, 2])
              for before, s in itertools.pairwise(levels)]
    inits = [numpy_helper.from_array(np.array([1, channels, -1], np.int64), "to_rows")]
    nodes += [node("Reshape", [f"a{s}", "to_rows"], [f"f{s}"], name=f"flat{s}") for s in levels]
    nodes.append(node("Concat", [f"f{s}" for s in levels], ["cat"], name="cat", axis=2))
    if reader == "split":
        inits.append(numpy_helper.from_array(np.array([channels - 2, 2], np.int64), "parts"))
        nodes += [node("Split", ["cat", "parts"], ["boxes", "logits"], name="split", axis=1),
                  node("Sigmoid", ["logits"], ["scores"], name="scores")]
        outputs = [helper.make_tensor_value_info("boxes", TensorProto.FLOAT, [1, channels - 2, total]),
                   helper.make_tensor_value_info("scores", TensorProto.FLOAT, [1, 2, total])]
    elif reader == "sigmoid":
        nodes.append(node("Sigmoid", ["cat"], ["y"], name="after"))
        outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, channels, total])]
    else:
        nodes.append(node("Transpose", ["cat"], ["y"], name="after", perm=[0, 2, 1]))
        outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, total, channels])]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, channels, levels[0], levels[0]])]
    graph = helper.make_graph(nodes, "g", inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


MODELS: dict[str, Callable[[], onnx.ModelProto]] = {
    "elim1": elim1, "elim2": elim2, "cast2": cast2, "drop9": drop9, "drop9m": lambda: drop9(mask=True),
    "flat_gemm": flat_gemm, "shuffle": shuffle, "dql": dql, "opset21": opset21, "cubic": cubic,
    "if_runtime": if_runtime, "dense": dense, "mulconv": mulconv, "half": half,
    "bn_eps": bn_eps,
    "attn_qdq": attention, "attn_qdq_i8": lambda: attention(zero_point=np.int8),
    "attn_float": lambda: attention(qdq_in=False, qdq_softmax=(False, False), qdq_out=False),
    "attn_pre": lambda: attention(qdq_softmax=(True, False)), "attn_post": lambda: attention(qdq_softmax=(False, True)),
    "attn_noin": lambda: attention(qdq_in=False), "attn_noout": lambda: attention(qdq_out=False),
    "qdq_conv": qdq_conv,
}
MODELS.update({"paddle_affine": paddle_affine, "reshape_transpose": reshape_transpose})  # issue 20's folds
MODELS.update({"octaves_export": stacked_octaves, "octaves_interleaved": lambda: stacked_octaves("interleaved")})
MODELS.update({  # issue 20: the Reshape RKNN adds after a Concat of flattened levels read by a Split
    "head_split_2100": flattened_head, "head_split_336": lambda: flattened_head((16, 8, 4), 8),
    "head_split_3549": lambda: flattened_head((52, 26, 13), 6),
    "head_sigmoid_2100": lambda: flattened_head(reader="sigmoid"),
    "head_transpose_2100": lambda: flattened_head(reader="transpose"),
    "head_transpose_336": lambda: flattened_head((16, 8, 4), 8, reader="transpose")})

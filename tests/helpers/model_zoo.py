"""Tiny ONNX models built in code, each with one "messy real-world" trait.

Every builder returns a fresh ``onnx.ModelProto`` (or, for the external-data
builders, writes one to disk and returns its path). Nothing is downloaded and
torch is not used. Unless a trait needs otherwise, models use opset 17 for the
default domain and ir_version 8, and every node has an explicit unique name.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR_VERSION = 8

_FLOAT = TensorProto.FLOAT
_INT64 = TensorProto.INT64


def _rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def _f32(shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    return _rng(seed).standard_normal(shape).astype(np.float32)


def _init(name: str, array: np.ndarray) -> TensorProto:
    return numpy_helper.from_array(array, name=name)


def _model(
    graph: onnx.GraphProto,
    *,
    opset: int = OPSET,
    ir_version: int = IR_VERSION,
    extra_opsets: dict[str, int] | None = None,
) -> onnx.ModelProto:
    opsets = [helper.make_opsetid("", opset)]
    for domain, version in (extra_opsets or {}).items():
        opsets.append(helper.make_opsetid(domain, version))
    model = helper.make_model(graph, opset_imports=opsets, producer_name="npu_gate.model_zoo")
    model.ir_version = ir_version
    return model


def _const_node(name: str, output: str, array: np.ndarray) -> onnx.NodeProto:
    return helper.make_node(
        "Constant",
        [],
        [output],
        name=name,
        value=numpy_helper.from_array(array, name=f"{output}_value"),
    )


# 1
def conv_relu() -> onnx.ModelProto:
    """Clean baseline: Conv (initializer weights, pads 1) -> Relu."""
    nodes = [
        helper.make_node(
            "Conv",
            ["x", "conv_w", "conv_b"],
            ["conv_out"],
            name="conv0",
            kernel_shape=[3, 3],
            pads=[1, 1, 1, 1],
        ),
        helper.make_node("Relu", ["conv_out"], ["y"], name="relu0"),
    ]
    graph = helper.make_graph(
        nodes,
        "conv_relu",
        [helper.make_tensor_value_info("x", _FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", _FLOAT, [1, 4, 8, 8])],
        initializer=[
            _init("conv_w", _f32((4, 3, 3, 3), 1)),
            _init("conv_b", _f32((4,), 2)),
        ],
    )
    return _model(graph)


# 2
def weights_in_constant_nodes() -> onnx.ModelProto:
    """Weights and bias live in Constant nodes (no initializers), plus ConstantOfShape."""
    nodes = [
        _const_node("const_w", "conv_w", _f32((4, 3, 3, 3), 1)),
        _const_node("const_b", "conv_b", _f32((4,), 2)),
        helper.make_node(
            "Conv",
            ["x", "conv_w", "conv_b"],
            ["conv_out"],
            name="conv0",
            kernel_shape=[3, 3],
            pads=[1, 1, 1, 1],
        ),
        _const_node("const_shape", "fill_shape", np.array([1, 4, 8, 8], dtype=np.int64)),
        helper.make_node(
            "ConstantOfShape",
            ["fill_shape"],
            ["fill"],
            name="const_of_shape0",
            value=numpy_helper.from_array(np.array([0.5], dtype=np.float32), name="fill_value"),
        ),
        helper.make_node("Add", ["conv_out", "fill"], ["y"], name="add0"),
    ]
    graph = helper.make_graph(
        nodes,
        "weights_in_constant_nodes",
        [helper.make_tensor_value_info("x", _FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", _FLOAT, [1, 4, 8, 8])],
    )
    return _model(graph)


# 3
def symbolic_dims() -> onnx.ModelProto:
    """Input dims mix a dim_param, a dim_value, a sympy-style expression and an unset dim."""
    x = helper.make_tensor_value_info("x", _FLOAT, ["batch", 3, "2*floor(h/2)", None])
    # make_tensor_value_info(None) already yields a dim with neither field set;
    # clear explicitly to make the intent obvious.
    x.type.tensor_type.shape.dim[3].Clear()
    y = helper.make_tensor_value_info("y", _FLOAT, ["batch", None])
    y.type.tensor_type.shape.dim[1].Clear()
    nodes = [
        helper.make_node("Relu", ["x"], ["relu_out"], name="relu0"),
        helper.make_node("Flatten", ["relu_out"], ["y"], name="flatten0", axis=1),
    ]
    graph = helper.make_graph(nodes, "symbolic_dims", [x], [y])
    return _model(graph)


# 4
def dynamic_reshape_chain() -> onnx.ModelProto:
    """The x.view(x.size(0), -1) chain: Shape -> Gather -> Unsqueeze -> Concat -> Reshape."""
    nodes = [
        helper.make_node("Shape", ["x"], ["x_shape"], name="shape0"),
        _const_node("const_idx", "idx0", np.array(0, dtype=np.int64)),
        helper.make_node("Gather", ["x_shape", "idx0"], ["batch_dim"], name="gather0", axis=0),
        helper.make_node(
            "Unsqueeze", ["batch_dim", "unsq_axes"], ["batch_dim_1d"], name="unsqueeze0"
        ),
        helper.make_node(
            "Concat", ["batch_dim_1d", "minus_one"], ["new_shape"], name="concat0", axis=0
        ),
        helper.make_node("Reshape", ["x", "new_shape"], ["y"], name="reshape0"),
    ]
    graph = helper.make_graph(
        nodes,
        "dynamic_reshape_chain",
        [helper.make_tensor_value_info("x", _FLOAT, ["N", 4, 2, 2])],
        [helper.make_tensor_value_info("y", _FLOAT, ["N", 16])],
        initializer=[
            _init("unsq_axes", np.array([0], dtype=np.int64)),
            _init("minus_one", np.array([-1], dtype=np.int64)),
        ],
    )
    return _model(graph)


# 5
def if_outer_scope() -> onnx.ModelProto:
    """Top-level If whose branches read an outer-scope tensor not passed as input."""
    then_graph = helper.make_graph(
        [
            _const_node("then_const", "then_c", np.full((1, 4), 1.0, dtype=np.float32)),
            helper.make_node("Add", ["outer_t", "then_c"], ["then_out"], name="then_add"),
        ],
        "then_branch",
        [],
        [helper.make_tensor_value_info("then_out", _FLOAT, [1, 4])],
    )
    else_graph = helper.make_graph(
        [
            _const_node("else_const", "else_c", np.full((1, 4), 1.0, dtype=np.float32)),
            helper.make_node("Sub", ["outer_t", "else_c"], ["else_out"], name="else_sub"),
        ],
        "else_branch",
        [],
        [helper.make_tensor_value_info("else_out", _FLOAT, [1, 4])],
    )
    nodes = [
        helper.make_node("Relu", ["x"], ["outer_t"], name="relu0"),
        helper.make_node(
            "If",
            ["cond"],
            ["y"],
            name="if0",
            then_branch=then_graph,
            else_branch=else_graph,
        ),
    ]
    graph = helper.make_graph(
        nodes,
        "if_outer_scope",
        [
            helper.make_tensor_value_info("x", _FLOAT, [1, 4]),
            helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
        ],
        [helper.make_tensor_value_info("y", _FLOAT, [1, 4])],
    )
    return _model(graph)


# 6
def loop_outer_scope() -> onnx.ModelProto:
    """Loop (trip count 3) whose body adds an outer-scope tensor each iteration."""
    body = helper.make_graph(
        [
            helper.make_node("Identity", ["cond_in"], ["cond_out"], name="body_cond"),
            helper.make_node("Add", ["v_in", "bias_t"], ["v_out"], name="body_add"),
        ],
        "loop_body",
        [
            helper.make_tensor_value_info("iter_num", _INT64, []),
            helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
            helper.make_tensor_value_info("v_in", _FLOAT, [1, 4]),
        ],
        [
            helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
            helper.make_tensor_value_info("v_out", _FLOAT, [1, 4]),
        ],
    )
    nodes = [
        helper.make_node("Identity", ["bias_w"], ["bias_t"], name="bias_identity"),
        _const_node("trip_count", "M", np.array(3, dtype=np.int64)),
        _const_node("loop_cond", "keep_going", np.array(True, dtype=np.bool_)),
        helper.make_node("Loop", ["M", "keep_going", "x"], ["y"], name="loop0", body=body),
    ]
    graph = helper.make_graph(
        nodes,
        "loop_outer_scope",
        [helper.make_tensor_value_info("x", _FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", _FLOAT, [1, 4])],
        initializer=[_init("bias_w", np.full((1, 4), 0.25, dtype=np.float32))],
    )
    return _model(graph)


# 7
def com_microsoft_op() -> onnx.ModelProto:
    """Conv -> com.microsoft Gelu -> Relu (onnx.checker may reject the contrib op)."""
    nodes = [
        helper.make_node(
            "Conv",
            ["x", "conv_w", "conv_b"],
            ["conv_out"],
            name="conv0",
            kernel_shape=[3, 3],
            pads=[1, 1, 1, 1],
        ),
        helper.make_node("Gelu", ["conv_out"], ["gelu_out"], name="gelu0", domain="com.microsoft"),
        helper.make_node("Relu", ["gelu_out"], ["y"], name="relu0"),
    ]
    graph = helper.make_graph(
        nodes,
        "com_microsoft_op",
        [helper.make_tensor_value_info("x", _FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", _FLOAT, [1, 4, 8, 8])],
        initializer=[
            _init("conv_w", _f32((4, 3, 3, 3), 1)),
            _init("conv_b", _f32((4,), 2)),
        ],
    )
    return _model(graph, extra_opsets={"com.microsoft": 1})


# 8
def custom_domain_op() -> onnx.ModelProto:
    """Unknown vendor op com.vendor::MyNpuOp between two Relus."""
    nodes = [
        helper.make_node("Relu", ["x"], ["relu0_out"], name="relu0"),
        helper.make_node(
            "MyNpuOp",
            ["relu0_out"],
            ["custom_out"],
            name="my_npu_op0",
            domain="com.vendor",
            alpha=1.5,
        ),
        helper.make_node("Relu", ["custom_out"], ["y"], name="relu1"),
    ]
    graph = helper.make_graph(
        nodes,
        "custom_domain_op",
        [helper.make_tensor_value_info("x", _FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", _FLOAT, [1, 4])],
    )
    return _model(graph, extra_opsets={"com.vendor": 1})


# 9
def nhwc_input() -> onnx.ModelProto:
    """NHWC image input wrapped in Transpose -> Conv -> Transpose."""
    nodes = [
        helper.make_node("Transpose", ["images"], ["nchw"], name="to_nchw", perm=[0, 3, 1, 2]),
        helper.make_node(
            "Conv",
            ["nchw", "conv_w", "conv_b"],
            ["conv_out"],
            name="conv0",
            kernel_shape=[3, 3],
            pads=[1, 1, 1, 1],
        ),
        helper.make_node("Transpose", ["conv_out"], ["y"], name="to_nhwc", perm=[0, 2, 3, 1]),
    ]
    graph = helper.make_graph(
        nodes,
        "nhwc_input",
        [helper.make_tensor_value_info("images", _FLOAT, [1, 16, 16, 3])],
        [helper.make_tensor_value_info("y", _FLOAT, [1, 16, 16, 4])],
        initializer=[
            _init("conv_w", _f32((4, 3, 3, 3), 1)),
            _init("conv_b", _f32((4,), 2)),
        ],
    )
    return _model(graph)


# 10
def int_inputs() -> onnx.ModelProto:
    """Integer inputs (int64 ids, int32 mask): embedding Gather * Cast(mask)."""
    nodes = [
        helper.make_node("Gather", ["embedding", "ids"], ["emb"], name="gather0", axis=0),
        helper.make_node("Cast", ["mask"], ["mask_f"], name="cast0", to=_FLOAT),
        helper.make_node("Unsqueeze", ["mask_f", "unsq_axes"], ["mask_3d"], name="unsqueeze0"),
        helper.make_node("Mul", ["emb", "mask_3d"], ["y"], name="mul0"),
    ]
    graph = helper.make_graph(
        nodes,
        "int_inputs",
        [
            helper.make_tensor_value_info("ids", _INT64, [1, 8]),
            helper.make_tensor_value_info("mask", TensorProto.INT32, [1, 8]),
        ],
        [helper.make_tensor_value_info("y", _FLOAT, [1, 8, 4])],
        initializer=[
            _init("embedding", _f32((10, 4), 3)),
            _init("unsq_axes", np.array([2], dtype=np.int64)),
        ],
    )
    return _model(graph)


def _matmul_64() -> onnx.ModelProto:
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y"], name="matmul0")]
    graph = helper.make_graph(
        nodes,
        "external_data",
        [helper.make_tensor_value_info("x", _FLOAT, [1, 64])],
        [helper.make_tensor_value_info("y", _FLOAT, [1, 64])],
        initializer=[_init("w", _f32((64, 64), 4))],
    )
    return _model(graph)


# 11
def external_data(tmp_dir: Path) -> Path:
    """Weights saved as external data (model.onnx + model.onnx.data); returns model path."""
    tmp_dir = Path(tmp_dir)
    tmp_dir.mkdir(parents=True, exist_ok=True)
    path = tmp_dir / "model.onnx"
    onnx.save_model(
        _matmul_64(),
        str(path),
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location="model.onnx.data",
        size_threshold=0,
    )
    return path


def external_data_outside(tmp_dir: Path) -> Path:
    """External data location escapes the model dir (``../secret.bin``); returns model path."""
    tmp_dir = Path(tmp_dir)
    model_dir = tmp_dir / "model"
    model_dir.mkdir(parents=True, exist_ok=True)
    model = _matmul_64()
    tensor = model.graph.initializer[0]
    raw = tensor.raw_data
    (tmp_dir / "secret.bin").write_bytes(raw)
    tensor.ClearField("raw_data")
    tensor.data_location = TensorProto.EXTERNAL
    for key, value in (("location", "../secret.bin"), ("offset", "0"), ("length", str(len(raw)))):
        entry = tensor.external_data.add()
        entry.key = key
        entry.value = value
    path = model_dir / "model.onnx"
    # Serialize directly: onnx.save_model must not touch/validate the external file.
    path.write_bytes(model.SerializeToString())
    return path


# 12
def ir3_initializer_as_input() -> onnx.ModelProto:
    """Old-exporter style (ir_version 3, opset 8): initializer ``w`` also listed in graph.input."""
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y"], name="matmul0")]
    graph = helper.make_graph(
        nodes,
        "ir3_initializer_as_input",
        [
            helper.make_tensor_value_info("x", _FLOAT, [1, 4]),
            helper.make_tensor_value_info("w", _FLOAT, [4, 3]),
        ],
        [helper.make_tensor_value_info("y", _FLOAT, [1, 3])],
        initializer=[_init("w", _f32((4, 3), 5))],
    )
    return _model(graph, opset=8, ir_version=3)


# 13
def random_generator() -> onnx.ModelProto:
    """Non-deterministic RandomNormal node (no inputs) added to the input."""
    nodes = [
        helper.make_node(
            "RandomNormal",
            [],
            ["noise"],
            name="random_normal0",
            shape=[1, 4],
            dtype=_FLOAT,
            mean=0.0,
            scale=1.0,
        ),
        helper.make_node("Add", ["x", "noise"], ["y"], name="add0"),
    ]
    graph = helper.make_graph(
        nodes,
        "random_generator",
        [helper.make_tensor_value_info("x", _FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", _FLOAT, [1, 4])],
    )
    return _model(graph)


# 14
def diamond(cpu_op: str = "Clip") -> onnx.ModelProto:
    """Diamond A -> (B=cpu_op, C=Sigmoid) -> D=Add, for partition convexity tests."""
    nodes: list[onnx.NodeProto] = [helper.make_node("Relu", ["x"], ["a"], name="A")]
    if cpu_op == "Clip":
        nodes += [
            _const_node("B_min", "b_min", np.array(0.0, dtype=np.float32)),
            _const_node("B_max", "b_max", np.array(6.0, dtype=np.float32)),
            helper.make_node("Clip", ["a", "b_min", "b_max"], ["b"], name="B"),
        ]
    else:
        nodes.append(helper.make_node(cpu_op, ["a"], ["b"], name="B"))
    nodes += [
        helper.make_node("Sigmoid", ["a"], ["c"], name="C"),
        helper.make_node("Add", ["b", "c"], ["y"], name="D"),
    ]
    graph = helper.make_graph(
        nodes,
        "diamond",
        [helper.make_tensor_value_info("x", _FLOAT, [1, 4, 8, 8])],
        [helper.make_tensor_value_info("y", _FLOAT, [1, 4, 8, 8])],
    )
    return _model(graph)


# 15
# One 10-node block; "res" adds the block input back (a branch), "clip" is the
# sprinkled op a profile without Clip support must split partitions on.
_BLOCK = ("conv", "relu", "conv", "relu", "res", "mul", "conv", "relu", "res", "clip")


def many_nodes(n: int) -> onnx.ModelProto:
    """Deterministic n-node Conv1x1/Relu/Add/Mul/Clip chain with residual branches (benchmarks)."""
    if n < 1:
        raise ValueError("n must be >= 1")
    shape = [1, 8, 16, 16]
    make_node = helper.make_node
    nodes: list[onnx.NodeProto] = []
    append = nodes.append
    cur = "x"
    block_in = "x"
    period = len(_BLOCK)
    for i in range(n):
        kind = _BLOCK[i % period]
        if kind == "conv" and i % period == 0:
            block_in = cur
        out = "y" if i == n - 1 else f"t{i}"
        if kind == "conv":
            append(make_node("Conv", [cur, "w", "b"], [out], name=f"conv_{i}", kernel_shape=[1, 1]))
        elif kind == "relu":
            append(make_node("Relu", [cur], [out], name=f"relu_{i}"))
        elif kind == "res":
            append(make_node("Add", [cur, block_in], [out], name=f"add_{i}"))
        elif kind == "mul":
            append(make_node("Mul", [cur, "scale"], [out], name=f"mul_{i}"))
        else:
            append(make_node("Clip", [cur, "clip_min", "clip_max"], [out], name=f"clip_{i}"))
        cur = out
    graph = helper.make_graph(
        nodes,
        f"many_nodes_{n}",
        [helper.make_tensor_value_info("x", _FLOAT, shape)],
        [helper.make_tensor_value_info("y", _FLOAT, shape)],
        initializer=[
            _init("w", (_f32((8, 8, 1, 1), 6) * 0.1).astype(np.float32)),
            _init("b", np.zeros((8,), dtype=np.float32)),
            _init("scale", np.array([0.5], dtype=np.float32)),
            _init("clip_min", np.array(-6.0, dtype=np.float32)),
            _init("clip_max", np.array(6.0, dtype=np.float32)),
        ],
    )
    return _model(graph)


# 16
def shape_mismatch_broken() -> onnx.ModelProto:
    """Broken: MatMul inner dims disagree ([1,4] x [5,3]), strict shape inference fails."""
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y"], name="matmul0")]
    graph = helper.make_graph(
        nodes,
        "shape_mismatch_broken",
        [helper.make_tensor_value_info("x", _FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", _FLOAT, [1, 3])],
        initializer=[_init("w", _f32((5, 3), 7))],
    )
    return _model(graph)


ALL_SIMPLE: dict[str, Callable[[], onnx.ModelProto]] = {
    "conv_relu": conv_relu,
    "weights_in_constant_nodes": weights_in_constant_nodes,
    "symbolic_dims": symbolic_dims,
    "dynamic_reshape_chain": dynamic_reshape_chain,
    "if_outer_scope": if_outer_scope,
    "loop_outer_scope": loop_outer_scope,
    "com_microsoft_op": com_microsoft_op,
    "custom_domain_op": custom_domain_op,
    "nhwc_input": nhwc_input,
    "int_inputs": int_inputs,
    "ir3_initializer_as_input": ir3_initializer_as_input,
    "random_generator": random_generator,
    "diamond": diamond,
    "shape_mismatch_broken": shape_mismatch_broken,
}

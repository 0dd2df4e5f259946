"""Where the data layout of a tensor is known: from the contract's ``inputs[].layout``.

ONNX ops define their own layout (Conv reads NCHW). A contract may say a graph input is
channels-last (``NHWC``); that knowledge follows the tensor through Transpose (letters
permuted by ``perm``) and through ops that keep every axis where it is (elementwise
ops with an output of the same rank). Anywhere else the layout is unknown, which a
layout constraint reads as "the op's own ONNX layout".
"""

from __future__ import annotations

from collections.abc import Mapping

from npu_gate.graph.facts import NodeFacts, TensorInfo

# Ops whose output axes are their input axes, one for one (when the ranks agree).
_AXIS_PRESERVING = frozenset(
    {
        "Identity",
        "Cast",
        "Relu",
        "LeakyRelu",
        "PRelu",
        "Sigmoid",
        "HardSigmoid",
        "HardSwish",
        "Tanh",
        "Clip",
        "Elu",
        "Selu",
        "Celu",
        "Softplus",
        "Softsign",
        "Gelu",
        "Mish",
        "Abs",
        "Neg",
        "Exp",
        "Log",
        "Sqrt",
        "Reciprocal",
        "Erf",
        "Floor",
        "Ceil",
        "Round",
        "Sign",
        "Not",
        "Add",
        "Sub",
        "Mul",
        "Div",
        "Pow",
        "Max",
        "Min",
        "Mean",
        "Sum",
        "Where",
        "QuantizeLinear",
        "DequantizeLinear",
        "Dropout",
    }
)


def tensor_layouts(
    nodes: list[NodeFacts],
    order: list[int],
    tensors: Mapping[str, TensorInfo],
    declared: Mapping[str, str],
) -> dict[str, str]:
    """Tensor name -> dimension letters, for the tensors whose layout follows from ``declared``."""
    if not declared:
        return {}  # layouts only flow from declared inputs: nothing to follow
    layouts = dict(declared)
    for i in order:
        node = nodes[i]
        if node.domain != "" or not node.outputs or not node.outputs[0]:
            continue
        out = node.outputs[0]
        if node.op_type == "Transpose":
            source = layouts.get(node.inputs[0]) if node.inputs else None
            perm = node.attributes.get("perm")
            if (
                source is not None
                and isinstance(perm, list)
                and sorted(perm) == list(range(len(source)))
            ):
                layouts[out] = "".join(source[p] for p in perm)
        elif node.op_type in _AXIS_PRESERVING:
            rank = _rank(tensors.get(out))
            for name in node.inputs:
                known = layouts.get(name) if name else None
                if known is not None and len(known) == rank:
                    layouts[out] = known
                    break
    return layouts


def _rank(info: TensorInfo | None) -> int | None:
    return None if info is None or info.shape is None else len(info.shape)

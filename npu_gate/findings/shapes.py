"""Shapes: ``shape-inference``, ``input-mismatch``, ``dynamic-input``, ``dynamic-shape``,
``shape-computation``, ``fold-budget``."""

from __future__ import annotations

from typing import Any

from npu_gate.contract.parts import InputSpec
from npu_gate.findings.doc import RuleDoc
from npu_gate.graph import dims, shape_chains
from npu_gate.graph.facts import GraphFacts, TensorInfo
from npu_gate.graph.fold_budget import FoldSkip
from npu_gate.graph.shape_chains import ShapeChain
from npu_gate.placement.place import Placement
from npu_gate.result.types import ELIMINATED, FOLDED, Finding, make_finding


def shape_text(shape: list[Any] | None) -> str:
    """A shape as findings write it: ``[1, ?, 224]``; ``[?]`` when unknown."""
    if shape is None:
        return "[?]"
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


SHAPE_INFERENCE = RuleDoc(
    "shape-inference",
    finds="ONNX shape inference could not run at all; shapes are missing. Shape inference runs in strict "
          "mode with data propagation after applying the contract's input shapes; when that fails (an "
          "onnx-checker finding) a lenient pass still infers what it can. This warning means even the "
          "lenient pass failed.",
    why="Placement, partitions, boundary bytes and memory depend on shapes: shape-dependent checks are "
        "incomplete, so a clean report says less than it seems.",
    example="None: a model torch.onnx.export writes normally infers; this comes from a damaged or "
            "hand-edited graph.",
    fix="Read the message (onnx's error); fix the graph it names, or export it again.",
    evidence="onnx.shape_inference, strict with data propagation, then lenient; the message is its error.",
    fields="`message` only.",
)


def shape_inference(error: str) -> Finding:
    """Even lenient shape inference failed: its error."""
    return make_finding("shape-inference", error)


INPUT_MISMATCH = RuleDoc(
    "input-mismatch",
    finds="A declared input does not match the model's inputs: the contract misses an input the model has, "
          "or declares a dtype that differs from the model's. A contract input the model does not have, or "
          "a rank or static dim that differs from the model's, is a contract error before any analysis "
          "(exit 2, one line naming inputs[i] and the model's inputs) for the contract's ONNX model; this "
          "finding says so for the graphs not checked that way (an exported PyTorch model, a replacement).",
    why="The contract's shapes are what every placement and memory figure is computed from: a graph the "
        "contract describes wrongly is judged on inputs it will never receive.",
    example="""# the contract declares x float32 [1, 3, 224, 224], the module takes two inputs
def forward(self, x, mask):
    return self.net(x) * mask""",
    fix="Declare every model input in the contract's `inputs`, with the model's dtype, rank and static dims.",
    evidence="The graph's inputs (initializers that are inputs count from IR 4) against the contract's "
             "`inputs`.",
    fields="`subject`: the input's name; the message says what differs.",
)

DYNAMIC_INPUT = RuleDoc(
    "dynamic-input",
    finds="A graph input has a symbolic or unknown dimension. Raised even when the contract gives a static "
          "shape: the model itself stays dynamic.",
    why="NPU compilers need static shapes (RKNN refuses such inputs).",
    example="""# the ONNX input x is [batch, 3, 224, 224]
torch.onnx.export(model, x, "m.onnx", dynamic_axes={"x": {0: "batch"}})""",
    fix="Export with static shapes or fix the dim (the message names the dims the contract fixes). A "
        "warning instead of an error when the contract sets gates.allow_dynamic_shapes.",
    evidence="The model's own input types, before the contract's shapes are applied.",
    fields="`subject`: the input; `severity` warning under gates.allow_dynamic_shapes. The message gives "
           "the shape and what fixing the dim would make fold.",
)


def input_findings(
    model_inputs: list[TensorInfo], declared: list[InputSpec] | None, dynamic_severity: str,
    chains: list[ShapeChain],
) -> list[Finding]:
    """``dynamic-input`` per dynamic model input, then ``input-mismatch`` per contract input that
    differs from the model's (``declared`` None: inspect, no contract)."""
    out = []
    for info in model_inputs:
        if not info.static:
            fix = ""
            spec = next((s for s in declared or [] if s.name == info.name), None)
            if spec is not None and info.shape is None:
                fix = (f"; the contract fixes {shape_text(list(spec.shape))}: export with static "
                       "shapes or declare the input's shape in the model")
            elif spec is not None:
                fixed = ", ".join(f"{info.name}[{d}] = {spec.shape[d]}"
                                  for d, v in enumerate(info.shape or [])
                                  if not isinstance(v, int) and d < len(spec.shape))
                fix = (f"; the contract fixes {shape_text(list(spec.shape))}: export with static "
                       f"shapes or fix the dim in the model ({fixed})")
            # No shape at all is not "[?]", which would read as rank 1.
            shape = "no shape (not even a rank)" if info.shape is None else f"dynamic shape {shape_text(info.shape)}"
            effect = dims.fix_effect(info, chains) if info.shape is not None else ""
            message = f"input {info.name} has {shape} in the model{fix}{effect}"
            out.append(make_finding("dynamic-input", message, severity=dynamic_severity, subject=info.name))
    if declared is None:
        return out
    by_name = {i.name: i for i in model_inputs}
    for spec in declared:
        found = by_name.get(spec.name)
        if found is None:
            out.append(make_finding("input-mismatch", f"contract input {spec.name} is not an input of the model "
                                    f"(model inputs: {', '.join(by_name) or 'none'})", subject=spec.name))
            continue
        info = found
        if info.dtype is not None and info.dtype != spec.dtype:
            out.append(make_finding("input-mismatch", f"input {spec.name}: contract dtype {spec.dtype}, "
                                    f"model dtype {info.dtype}", subject=spec.name))
        if info.shape is not None:
            if len(info.shape) != len(spec.shape):
                out.append(make_finding("input-mismatch", f"input {spec.name}: contract shape "
                                        f"{shape_text(list(spec.shape))} has rank {len(spec.shape)}, "
                                        f"the model's {shape_text(info.shape)} rank {len(info.shape)}",
                                        subject=spec.name))
            elif any(isinstance(m, int) and m != c for m, c in zip(info.shape, spec.shape, strict=True)):
                out.append(make_finding("input-mismatch", f"input {spec.name}: contract shape "
                                        f"{shape_text(list(spec.shape))}, model shape {shape_text(info.shape)}",
                                        subject=spec.name))
    names = {s.name for s in declared}
    out += [make_finding("input-mismatch", f"model input {info.name} is not declared in the contract",
                         subject=info.name)
            for info in model_inputs if info.name not in names]
    return out


DYNAMIC_SHAPE = RuleDoc(
    "dynamic-shape",
    finds="A tensor's shape is still not static after shape inference. Reported per producing node. With "
          "the contract's static input shapes applied, a remaining unknown dim comes from data-dependent "
          "ops or from shape inference not knowing the op.",
    why="NPU compilers need static shapes; a tensor of unknown size cannot be planned in memory, and its "
        "bytes are unknown to the boundary and memory figures too.",
    example="""def forward(self, x):
    return x[x > 0]  # NonZero: the output's length depends on the values""",
    fix="Remove the data-dependent op (a mask multiply instead of indexing, a fixed-size top-k), or export "
        "with static shapes. A warning instead of an error when gates.allow_dynamic_shapes is set.",
    evidence="ONNX shape inference, refined by folding and onnxruntime's symbolic shape inference.",
    fields="`node`, `op_type`; `cause`: the dynamic graph input dims the shape follows from; the message "
           "lists the outputs and their shapes.",
)


def dynamic_shape_findings(facts: GraphFacts, placements: list[Placement], order: list[int],
                           model_inputs: list[TensorInfo], severity: str) -> list[Finding]:
    """A finding per non-folded node with an output whose shape is not static, each with its
    root cause (``Finding.cause``: the dynamic input dims it follows from)."""
    causes: dict[int, list[str]] | None = None
    out = []
    for node, placement in zip(facts.nodes, placements, strict=True):
        if placement.device in (FOLDED, ELIMINATED):
            continue  # constants the compiler evaluates ahead of time, or nodes it removes
        dynamic = []
        for name in node.outputs:
            info = facts.tensors.get(name) if name else None
            if name and (info is None or not info.static):
                dynamic.append(info or TensorInfo(name, None, None))
        if dynamic:
            shapes = ", ".join(f"{t.name} {shape_text(t.shape) if t.shape is not None else 'unknown'}"
                               for t in dynamic)
            if causes is None:  # only for a model with dynamic shapes
                causes = dims.dynamic_causes(facts, order or list(range(len(facts.nodes))), model_inputs)
            out.append(make_finding("dynamic-shape", f"output shape not static: {shapes}", severity=severity,
                                    node=node.name, op_type=node.key, cause=causes.get(node.index)))
    return out


SHAPE_COMPUTATION = RuleDoc(
    "shape-computation",
    finds="A shape computation (Shape/Size → ... → a shape input) stays in the graph: a subgraph computes a "
          "shape-like input (Reshape shape, Resize sizes, Slice starts, Expand shape...) from the runtime "
          "shape of a tensor, and it does not fold under the contract's input shapes.",
    why="The compiler receives shape arithmetic it must run at inference time, which NPU compilers usually "
        "refuse or leave on CPU.",
    example="""def forward(self, x):
    return x.view(x.size(0), -1)  # with a dynamic batch: Shape -> Gather -> Concat -> Reshape""",
    fix="Export with static shapes, or fix the dims the finding names. A warning instead of an error when "
        "gates.allow_dynamic_shapes is set.",
    evidence="The graph's shape chains after folding under the contract's input shapes.",
    fields="`node` and `op_type`: the chain's consumer; the message names the chain's nodes and the dims "
           "that keep it (and the graph input dims they come from).",
)


def shape_computation_findings(chains: list[ShapeChain], severity: str) -> list[Finding]:
    """One finding per shape chain that does not fold."""
    return [make_finding("shape-computation", shape_chains.describe(chain), severity=severity,
                         node=chain.consumer, op_type=chain.consumer_op)
            for chain in chains if not chain.folds]


FOLD_BUDGET = RuleDoc(
    "fold-budget",
    finds="A folded node's value was not computed: it is over the folding budget. Folding computes the "
          "values of folded nodes that shapes depend on (onnx's reference evaluator), node by node, and "
          "counts before each node runs: a Loop's trip count or a Scan's length above 10,000 iterations (a "
          "Loop without a trip count, or with a Loop or Scan in its body, cannot be counted), an output "
          "above 10 million elements (ConstantOfShape, Expand, Tile, Range, Pad, Resize sizes from their "
          "input values; other ops from their inputs' broadcast), or more than 50 million elements held in "
          "all, is not evaluated; the wall clock is checked between nodes, 10 s for every evaluation of one "
          "analysis together, and never past the run's time limit (`--timeout`: then `constraint` is "
          "`deadline` and a `gate-timeout` error fails the run).",
    why="The node still folds (it reads only constants: a compiler evaluates it ahead of time, and would "
        "have to do the same work), but its value, and the values of the folded nodes reading it, stay "
        "unknown, so the dims that depend on them stay unknown (`dynamic-shape` findings name them).",
    example="None verified: a shape read from a constant of more than 10 million elements built at export "
            "time, or from a scripted loop of more than 10,000 iterations, reaches the budget.",
    fix="Compute the shape without an unbounded Loop or a huge constant tensor.",
    evidence="npu_gate's own count before each node's evaluation, and the wall clock between nodes.",
    fields="`node`, `op_type`; `constraint` the budget exceeded, `actual` the count, `allowed` the budget.",
)


def fold_budget_finding(facts: GraphFacts, skip: FoldSkip) -> Finding:
    """A folded node whose value was not computed: what was left unknown and why."""
    node = facts.nodes[skip.index]
    outputs = ", ".join(o for o in node.outputs if o)
    readers = f" (nor {skip.dependents} folded node{'s' if skip.dependents != 1 else ''} reading it)" \
        if skip.dependents else ""
    message = (f"value of {outputs} not computed while folding{readers}: {skip.why}; it still folds, "
               "but the dims that depend on it stay unknown")
    return make_finding("fold-budget", message, node=node.name, op_type=node.key, constraint=skip.limit,
                        actual=skip.actual, allowed=skip.allowed)


DOCS = (SHAPE_INFERENCE, INPUT_MISMATCH, DYNAMIC_INPUT, DYNAMIC_SHAPE, SHAPE_COMPUTATION, FOLD_BUDGET)

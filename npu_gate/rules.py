"""The rule registry: stable kebab-case ids, default severities and docs.

Ids are interface: users waive them, scripts grep them. An id is never renamed
and a retired id is never reused (see ``RETIRED``). Severity is a separate field.
"""

from __future__ import annotations

from dataclasses import dataclass

ERROR = "error"
WARNING = "warning"
INFO = "info"


@dataclass(frozen=True)
class Rule:
    id: str
    severity: str
    summary: str
    doc: str
    finding: bool = True  # False: the run stops with exit 2 instead of reporting a finding
    # True: the finding puts a node on CPU (a missing op, a failed constraint, a profile limit).
    # A compiler's measurement (``target.probe.decide: measured``) judges these findings; the
    # review table, the minimal models and the probe stage read this flag, nobody keeps a list.
    placement: bool = False


# How findings, reports and waivers name a node (docs/rules.md and `npu-gate explain waiver-unused`).
NODE_NAMES = (
    "A waiver's `node` is matched against the node's name as reports and the JSON show it. That "
    "is the model's own name, unless the node has none or shares it with other nodes: then it "
    "is `<name>#<index>` (the op type for an unnamed node, e.g. `Relu#0`; index: the node's "
    "position in the graph's node list, from 0), with `_2`, `_3`... appended if the model "
    "already has a node of that name. The JSON keeps the model's name in "
    "`nodes[].original_name`. A waiver that names a shared name matches nothing; its "
    "`waiver-unused` finding lists the names to use. A name copied from a rendered Markdown "
    "report matches too: the invisible word joiners (U+2060) that reports put after `#` and "
    "`@` are ignored."
)

RULES: dict[str, Rule] = {
    r.id: r
    for r in (
        Rule(
            "contract-invalid",
            ERROR,
            "The contract, a profile it names, or the model file cannot be used.",
            "Not a finding: npu-gate prints one line per problem (file and JSON path) and exits 2 "
            "before any model is analysed. Fix the contract; nothing was judged yet.",
            finding=False,
        ),
        Rule(
            "export-failed",
            ERROR,
            "The PyTorch model could not be exported to ONNX.",
            "The exporter's own message is kept in the finding and the full output in the "
            "conversion log (--log). Nothing downstream (placement, numerics) ran.",
        ),
        Rule(
            "onnx-checker",
            ERROR,
            "onnx.checker rejects the model (full check).",
            "The model violates the ONNX specification (unknown op, bad attribute, wrong IR), or "
            "the full check's strict shape inference fails (incompatible shapes, wrong types). "
            "Vendor compilers usually reject such models outright.",
        ),
        Rule(
            "fold-budget",
            WARNING,
            "A folded node's value was not computed: it is over the folding budget.",
            "Folding computes the values of folded nodes that shapes depend on (onnx's reference "
            "evaluator), node by node, and counts before each node runs: a Loop's trip count or "
            "a Scan's length above 10,000 iterations (a Loop without a trip count, or with a "
            "Loop or Scan in its body, cannot be counted), an output above 10 million elements "
            "(ConstantOfShape, Expand, Tile, Range, Pad, Resize sizes from their input values; "
            "other ops from their inputs' broadcast), or more than 50 million elements held in "
            "all, is not evaluated; the wall clock is checked between nodes, 10 s for every "
            "evaluation of one analysis together, and never past the run's time limit "
            "(`--timeout`: then `constraint` is `deadline` and a `gate-timeout` error fails the "
            "run). The node still folds (it reads only "
            "constants: a compiler evaluates it ahead of time, and would have to do the same "
            "work), but its value, and the values of the folded nodes reading it, stay unknown, "
            "so the dims that depend on them stay unknown (`dynamic-shape` findings name them). "
            "`constraint` is the budget exceeded, `actual` the count, `allowed` the budget. Fix: "
            "compute the shape without an unbounded Loop or a huge constant tensor.",
        ),
        Rule(
            "shape-inference",
            WARNING,
            "ONNX shape inference could not run at all; shapes are missing.",
            "Shape inference runs in strict mode with data propagation after applying the "
            "contract's input shapes; when that fails (an onnx-checker finding) a lenient pass "
            "still infers what it can. This warning means even the lenient pass failed, so "
            "shape-dependent checks are incomplete.",
        ),
        Rule(
            "input-mismatch",
            ERROR,
            "A declared input does not match the model's inputs.",
            "The contract misses an input the model has, or declares a dtype that differs from "
            "the model's. A contract input the model does not have, or a rank or static dim that "
            "differs from the model's, is a contract error before any analysis (exit 2, one line "
            "naming inputs[i] and the model's inputs) for the contract's ONNX model; this finding "
            "says so for the graphs not checked that way (an exported PyTorch model, a replacement).",
        ),
        Rule(
            "dynamic-input",
            ERROR,
            "A graph input has a symbolic or unknown dimension.",
            "Raised even when the contract gives a static shape: the model itself stays "
            "dynamic, and NPU compilers need static shapes (RKNN refuses such inputs). Export "
            "with static shapes or fix the dim. A warning instead of an error when the "
            "contract sets gates.allow_dynamic_shapes.",
        ),
        Rule(
            "dynamic-shape",
            ERROR,
            "A tensor's shape is still not static after shape inference.",
            "Reported per producing node. With the contract's static input shapes applied, a "
            "remaining unknown dim comes from data-dependent ops or from shape inference not "
            "knowing the op. A warning instead of an error when gates.allow_dynamic_shapes is "
            "set.",
        ),
        Rule(
            "shape-computation",
            ERROR,
            "A shape computation (Shape/Size → ... → a shape input) stays in the graph.",
            "A subgraph computes a shape-like input (Reshape shape, Resize sizes, Slice starts, "
            "Expand shape...) from the runtime shape of a tensor, and it does not fold under the "
            "contract's input shapes: the compiler receives shape arithmetic it must run at "
            "inference time, which NPU compilers usually refuse or leave on CPU. The finding names "
            "the chain's nodes and the dims that keep it (and the graph input dims they come "
            "from). Export with static shapes, or fix those dims. A warning instead of an error "
            "when gates.allow_dynamic_shapes is set.",
        ),
        Rule(
            "unsupported-op",
            ERROR,
            "The op (domain, type) is not in the target profile: CPU fallback.",
            "The node is predicted to run on CPU. Every CPU node can split the graph into more "
            "NPU partitions, each boundary costing copies and syncs. Replace the op, or waive "
            "it with a reason.",
            placement=True,
        ),
        Rule(
            "op-constraint",
            ERROR,
            "The op is in the profile but a constraint fails: CPU fallback.",
            "One finding per failed constraint, each with the constraint id, the actual value "
            "and the allowed values. All constraints are evaluated, not only the first.",
            placement=True,
        ),
        Rule(
            "profile-limit",
            ERROR,
            "A global limit of the profile fails: CPU fallback (or, for the opset, the model).",
            "The profile's `limits` apply to every op it supports: opset range, allowed domains "
            "and dtypes, maximum rank, maximum elements/bytes of one runtime tensor, static "
            "shapes. Each finding names the limit (constraint `limit-dtypes`, `limit-max-rank`, "
            "...), the value seen and the value allowed; the node is predicted to run on CPU. "
            "A model opset outside `limits.opset` is one finding without a node: the target's "
            "converter is expected to refuse the model. When the profile's `refuses` has an "
            "`opset-above` entry that matches too, its `compiler-will-refuse` (the compiler's own "
            "words, with their evidence) is the one finding and this one is not given.",
            placement=True,
        ),
        Rule(
            "npu-node-split",
            WARNING,
            "A node placed on the NPU runs as pieces on several devices: the compiler adds a CPU op inside it.",
            "The profile's `splits` (docs/target-profiles.md#splits) lists nodes the compiler runs "
            "as several ops on several devices: RKNN runs a MatMul/Gemm with a constant weight "
            "and more than 8192 output features (an nn.Linear head, e.g. a CTC recogniser's "
            "classifier over thousands of characters) as an NPU Conv, then the Transpose back to "
            "the ONNX layout on the CPU (its Transposes of a dim above 8192 run there), then an "
            "NPU Reshape: one NPU partition becomes two, with a CPU partition between them and "
            "the head's output copied twice. The node stays `npu`; its `split` names the pieces, "
            "and partitions and boundary bytes are counted over them. The finding names the node "
            "(`constraint`: the entry), the failed condition and the fix: keep the Linear's "
            "out_features at or below the limit, split the classifier into chunks of at most the "
            "limit concatenated after it, or run the head on the CPU deliberately.",
        ),
        Rule(
            "compiler-will-refuse",
            ERROR,
            "The target's compiler is expected to refuse to build the model.",
            "The profile's `refuses` (docs/target-profiles.md#refuses) lists what its compiler "
            "will not build: node patterns (an op, optionally only at or below an opset, with at "
            "least some outputs, or with an attribute value) and graph conditions (an opset above "
            "the compiler's maximum, a dynamic-quantization op such as DynamicQuantizeLinear, a "
            "graph input read only inside If/Loop/Scan bodies, an attention MatMul -> Softmax -> "
            "MatMul with every tensor in QDQ, stacked Concats read by a Slice and a Transpose in a "
            "node order the compiler's rewrites crash on). One finding per match, naming the "
            "node (or `subject`: the input), the profile entry (`constraint`) and its evidence; "
            "the message quotes the compiler's own wording when the profile records it, and `fix` "
            "is the entry's when it has one. Remove "
            "the construct before export (e.g. export in eval mode, quantize statically, lower "
            "the opset) or choose another target.",
        ),
        Rule(
            "eliminated-changes-numerics",
            WARNING,
            "The target's compiler removes a node that is not an exact no-op for this model: the "
            "build computes other numbers than the ONNX model.",
            "The profile's `eliminates` (docs/target-profiles.md#eliminates) says the compiler drops "
            "the node before it places anything, and the node is eliminated, but its output is not "
            "exactly its input. A BatchNormalization whose scale, bias, mean and variance are 1, 0, 0 "
            "and 1 (random-init torchvision nets have them) is removed as an identity whatever its "
            "epsilon, yet it computes y = x / sqrt(1 + epsilon): with epsilon 0.1 the ONNX model's "
            "output is 4.65 % below the build's. Measured with RKNN-Toolkit2 2.5.0 (rk3588, fp16, its "
            "simulator against onnxruntime, docs/rknn.md): Relu -> BatchNormalization(1/0/0/1, "
            "epsilon 0.1) -> Relu gave the onnxruntime output times 1.0488 (= sqrt(1.1)); a "
            "BatchNormalization a Conv's output feeds alone is folded into the Conv with its epsilon "
            "(`into-conv`, exact: no finding). The finding is given when the relative change "
            "1 - 1/sqrt(1 + epsilon) is above 1e-3 (epsilon above about 2e-3; PyTorch's default 1e-5 "
            "changes 5e-6): the targets compute in float16, whose rounding (2^-11 = 4.9e-4) hides "
            "less than that. Fields: `node`, `op_type`, `constraint` `relative-change`, `actual` "
            "{`epsilon`, `relative_change`}, `allowed` {`relative_change`: 0.001}, `evidence` the "
            "profile's label, the message quoting the `eliminates` entry's own evidence, `doc` its "
            "calibration record. Fix in PyTorch: keep "
            "nn.BatchNorm2d's default eps=1e-5 (or below 2e-3), or fold the BatchNorm away before "
            "export (into the Conv before it: torch.nn.utils.fusion.fuse_conv_bn_eval, "
            "torch.ao.quantization.fuse_modules), or export trained weights.",
        ),
        Rule(
            "unchecked-condition",
            INFO,
            "Predicted on the NPU, but the profile's source states a condition npu_gate "
            "cannot check.",
            "A profile marks such conditions `unchecked`: the document is vague (\"too many "
            "permutations to describe\"), or the condition is about tensor values npu_gate does "
            "not read (\"pads should be non-negative\"). The node keeps its NPU placement; the "
            "finding says which prediction rests on an unverified condition. Confirm it on the "
            "target.",
        ),
        Rule(
            "numeric-mismatch",
            ERROR,
            "ONNX Runtime output differs from PyTorch beyond atol/rtol.",
            "The exported graph was run with onnxruntime (CPU) on seeded samples drawn from the "
            "contract's input ranges and compared with the eager module. An element passes when "
            "|onnx - torch| <= atol + rtol * |torch|. NaN never passes, on either side; an "
            "infinity passes only where both sides hold the same one (the result then counts them). "
            "Outputs are compared in order: the ONNX model's outputs against the module's returned "
            "tensors, tuples, lists and dict values flattened in order.",
        ),
        Rule(
            "numerics-uninformative",
            WARNING,
            "An output's comparison with PyTorch cannot tell much: its values are tiny, zero or constant.",
            "A random-init net's outputs can be ~1e-9: every value is within atol of zero, so "
            "|onnx - torch| <= atol passes whatever the export computes. When every reference value lies "
            "within atol of 0, the output is judged instead by its error relative to its own scale "
            "(max abs error / max |reference| <= rtol; `scale_rel_err` in the result), and this warning "
            "names the output's range. An output that is all zero, or constant over every sample and "
            "element, passes a comparison that cannot tell whether the export depends on its inputs: a "
            "warning too. Use trained weights or a samples_file of real inputs, or lower atol.",
        ),
        Rule(
            "numerics-failed",
            ERROR,
            "The numeric comparison could not run.",
            "onnxruntime could not create a session or run the model, or the PyTorch module "
            "raised. The message says which.",
        ),
        Rule(
            "standalone-qdq",
            ERROR,
            "A Q/DQ node onnxruntime puts in no QDQ unit, which the target runs on CPU: CPU fallback.",
            "onnxruntime groups each op of a QDQ graph with its DequantizeLinear inputs and QuantizeLinear "
            "outputs into one node unit, but its Conv and Gemm selectors form none when the bias "
            "DequantizeLinear is not int32 (a bias quantized like an activation, e.g. through an exporter's "
            "Identity of a shared initializer). The op then runs in float and each Q/DQ is a node of its own; "
            "the profile's `standalone_qdq` entry (`constraint` is its id) says the target runs this one on "
            "CPU, in the compiler's words when known (QNN's HTP: \"QNN EP does not support a standalone DQ "
            "op with per-channel quantization\"). Give the op an int32 bias (quantize the float model with "
            "its own bias initializers: npu-gate's QNN preparation folds Identity nodes of initializers "
            "first), or quantize the weight per tensor.",
            placement=True,
        ),
        Rule(
            "quantized-op-unsupported",
            ERROR,
            "A quantized unit's op runs in float on the target but not in its integer dtypes: CPU fallback.",
            "In a QDQ graph each op is judged with its DequantizeLinear inputs and QuantizeLinear outputs as "
            "one unit, in the unit's integer dtypes (the quantized tensors' dtypes); the profile states a "
            "condition for those dtypes (`when`, docs/target-profiles.md) that the node fails, though its "
            "float form passes. The message lists the failed constraints; `constraint`, `actual` and "
            "`allowed` are the first one's. The Q/DQ nodes of the unit go with it and are never findings "
            "of their own. Keep the op in float (exclude it from quantization) or change it to a form the "
            "target runs in integers.",
            placement=True,
        ),
        Rule(
            "quantization-failed",
            ERROR,
            "The contract's quantization could not run: the quantizer or the quantized model raised.",
            "onnxruntime's static quantization (`quantize_static`, QDQ format) of the checked graph, "
            "or a run of the float or quantized model on the hold-out samples, raised; the message "
            "is the error in one line. The quantization gates (`min_output_sqnr_db`, "
            "`min_output_cosine`) are then not measured and fail too. See docs/quantization.md. "
            "The QNN probe too (`npu-gate probe --compiler qnn --quantize int8|int16`, or a contract's "
            "`target.probe` with `quantization`): when its QDQ preparation for the HTP "
            "(`qnn_preprocess_model`, `get_qnn_qdq_config`, `quantize`) raises on the model, the "
            "probe's status is failed with the quantizer's error line, the compiler is not run and "
            "nothing of the quantized build is checked; `npu-gate probe` exits 1 (as for "
            "`compiler-failed`), a contract's gate fails (docs/qnn.md).",
        ),
        Rule(
            "quantization-error",
            ERROR,
            "An output of the quantized model is below a quantization gate on the hold-out samples.",
            "The float graph and its quantized form (onnxruntime CPU) were run on the hold-out "
            "samples, which are never calibration samples; an output's SQNR (dB) or cosine "
            "similarity is below `gates.min_output_sqnr_db` / `gates.min_output_cosine`. The finding "
            "names the output (`subject`), the figure (`actual`, `allowed`, `constraint` the gate) and "
            "the worst layer (`node`): the activation with the lowest float-vs-quantized SQNR, as "
            "onnxruntime's `qdq_loss_debug` matches them. A per-tensor scale shared by values of very "
            "different magnitudes (a branch spanning 1e4 beside values in [0, 1]) is the usual cause: "
            "rescale the branch, keep it apart from the small values, or use more bits "
            "(`quantization.mode` int16).",
        ),
        Rule(
            "gate-exceeded",
            ERROR,
            "A limit in the contract's gates was exceeded.",
            "max_cpu_nodes, max_npu_partitions, max_boundary_bytes, max_peak_activation_bytes, "
            "max_weight_bytes, max_sram_bytes or max_estimated_ms. A limit that cannot be checked (bytes "
            "unknown because of dynamic shapes, no compiler estimate) counts as exceeded. A memory gate's "
            "finding names the NPU partition (field `partition`), the largest tensor live at its peak (in "
            "the message) and that tensor's producer (`node`); the figures are the static estimate's upper "
            "bound (docs/memory.md). max_sram_bytes and max_estimated_ms gate the compiler's own estimate "
            "from target.probe (Vela's for ethos-u: its source is in the message, \"estimated by Vela 5.2.0 "
            "for ...\"); without a probe that built the model and gave the figure they fail as \"could not "
            "be checked\" (docs/ethos-u.md).",
        ),
        Rule(
            "memory-budget",
            ERROR,
            "An NPU partition's estimated memory exceeds the budget the target profile declares.",
            "The profile's `memory` states the target's budget (only where its sources do; none "
            "of the built-in profiles does). Against it: each NPU partition's peak live "
            "activation bytes (`sram_bytes`), the NPU partitions' weight bytes (`weight_bytes`), "
            "and the largest peak plus the weights (`dram_bytes`). The figures are the static "
            "estimate (docs/memory.md): an upper bound (topological schedule, no in-place reuse, "
            "no tiling), in the profile's `runtime_dtype`. The finding names the partition "
            "(`partition`), the budget (`constraint`, `actual`, `allowed`), the largest tensors "
            "live at the peak with their producer nodes (the first one as `subject` and `node`). "
            "A figure unknown because a size is not static cannot be checked and fails.",
        ),
        Rule(
            "gate-timeout",
            ERROR,
            "The run reached its time limit (--timeout) before it finished: the gate fails.",
            "`check`, `inspect` and `check-onnx` stop at `--timeout SECONDS` (default 1800; 0: no "
            "limit; per model when several are gated). The limit is checked between stages, by "
            "folding between nodes (a `fold-budget` finding with constraint `deadline` names the "
            "values not computed) and by the compiler probe, whose timeout is at most the time "
            "left. The stages that did not start are recorded as skipped (reason `timeout: ...`); "
            "the verdict rests on what was analysed, and this error makes sure it is never a pass. "
            "`subject` is the stage that was running, `allowed` the limit in seconds. A timed-out "
            "result is not cached. It cannot be waived: raise `--timeout`, or find what is slow "
            "(the report's timings; a huge Loop or constant computed while folding).",
        ),
        Rule(
            "waiver-expired",
            WARNING,
            "A waiver's expiry date has passed; it no longer waives anything.",
            "Renew it with a new date and reason, or fix the finding it covered.",
        ),
        Rule(
            "waiver-unused",
            INFO,
            "A waiver matched no finding.",
            "The finding it covered is gone (or the waiver has a typo). Remove it to keep the "
            "contract honest. " + NODE_NAMES,
        ),
        Rule(
            "rewrite-mismatch",
            ERROR,
            "A rewrite named in the contract (or its replacement model) changes the numbers beyond tolerance.",
            "The original and the rewritten model run with onnxruntime (CPU, graph optimizations "
            "off) on the contract's seeded samples and the rows of numerics.samples_file; every "
            "graph output and the output tensor of every replaced region (layer-wise) is "
            "compared: an element passes when |rewritten - original| <= atol + rtol * "
            "|original|. A wrong rewrite often hides end to end and shows at its region. A "
            "`replacement` model is compared end to end only (outputs paired by position).",
        ),
        Rule(
            "rewrite-unmatched",
            WARNING,
            "A rewrite named in the contract matched no node.",
            "Nothing was rewritten for it (see `npu-gate rewrites` for what each one matches). "
            "Remove it from the contract, or check that the model still has the pattern.",
        ),
        Rule(
            "rewrite-unverified",
            WARNING,
            "The contract's rewrites (or replacement) were applied with no numerical proof.",
            "numerics.samples is 0 and there is no numerics.samples_file, so the original and the "
            "rewritten model never ran side by side: the gate judged a graph nobody compared. "
            "Give numerics.samples (or a samples_file of real inputs) so the rewrite is verified.",
        ),
        Rule(
            "task-metric",
            ERROR,
            "The contract's task metric missed its threshold or could not be computed.",
            "metric.callable(reference_outputs, candidate_outputs, samples) compares the original "
            "and the rewritten model's outputs; every value named in metric.threshold must lie "
            "within its min/max.",
        ),
        Rule(
            "compiler-failed",
            ERROR,
            "A real compiler (npu-gate probe) rejected the model or crashed on it.",
            "The compiler ran in its own venv, in a child process: it reported an error (the "
            "message is in the finding, the full log with --log), died on a signal (RKNN-Toolkit2 "
            "2.5.0 SIGSEGVs on cubic Resize) or hit the timeout. When the log names a rewrite rule "
            "to disable, the probe retries once with it disabled; if that build succeeds the "
            "finding is a warning saying which rule had to be disabled.",
        ),
        Rule(
            "rank-adapter",
            WARNING,
            "The target adds a rank adapter on CPU at a graph input or output.",
            "The profile's `rank_adapters` say the target computes in one rank (RKNN: 4-D) and "
            "wraps graph inputs and outputs of another rank in an adapter op (a Reshape), run on "
            "the NPU only when `npu_when` holds (RKNN: the last dim a multiple of 8). A CPU "
            "adapter is one more CPU segment and a copy at the graph edge that no model node "
            "shows. Give the tensor the target's rank, or a last dim the rule accepts.",
        ),
    )
}

# The rules whose findings put a node on CPU (see ``Rule.placement``).
PLACEMENT_RULES = frozenset(r.id for r in RULES.values() if r.placement)

# Ids that existed once and must never be reused, with the version that retired them.
RETIRED: dict[str, str] = {}


def rules_markdown() -> str:
    """docs/rules.md, generated from this registry (a test keeps the file up to date)."""
    lines = [
        "# Rules",
        "",
        "Generated by `npu-gate rules --format markdown`; do not edit by hand.",
        "Ids are stable: never renamed, never reused. Severity is the default; waivers and",
        "`gates.allow_dynamic_shapes` change what fails the gate, not the id.",
        "",
        "Waivers (`waivers[]` in the contract: `rule`, and optionally `node` and `op_type`) mark "
        "the findings they match as waived (the first waiver that matches and has not expired gives the "
        "reason; `waiver-expired`, `waiver-unused` and `gate-timeout` cannot be waived). " + NODE_NAMES,
        "",
        "| id | severity | summary |",
        "| --- | --- | --- |",
    ]
    for r in RULES.values():
        lines.append(f"| [`{r.id}`](#{r.id}) | {r.severity if r.finding else 'exit 2'} | {r.summary} |")
    for r in RULES.values():
        lines += ["", f"## {r.id}", "", f"Severity: {r.severity if r.finding else 'not a finding; exit 2'}.", "",
                  r.summary, "", r.doc]
    if RETIRED:
        lines += ["", "## Retired ids", ""] + [f"- `{i}` (retired in {v})" for i, v in RETIRED.items()]
    return "\n".join(lines) + "\n"

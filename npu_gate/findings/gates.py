"""Gates and budgets: ``gate-exceeded``, ``memory-budget``, ``gate-timeout``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from npu_gate.findings.doc import RuleDoc
from npu_gate.result.types import Finding, GateResult, make_finding

if TYPE_CHECKING:  # the estimate (and onnx, through graph facts) only where memory is judged
    from npu_gate.placement.memory import PartitionMemory

GATE_EXCEEDED = RuleDoc(
    "gate-exceeded",
    finds="A limit in the contract's gates was exceeded: max_cpu_nodes, max_npu_partitions, "
          "max_boundary_bytes, max_peak_activation_bytes, max_weight_bytes, max_sram_bytes or "
          "max_estimated_ms (and the quantization gates min_output_sqnr_db and min_output_cosine when "
          "they were not measured). A limit that cannot be checked (bytes unknown because of dynamic shapes, "
          "no compiler estimate) counts as exceeded.",
    why="The gates are the team's own budget for the target: CPU nodes, partitions and boundary bytes cost "
        "copies and syncs, and memory beyond the budget does not fit.",
    example="""# gates.max_npu_partitions 1, and a profile without GELU: it runs on CPU between two NPU partitions
torch.nn.Sequential(conv, torch.nn.GELU(), conv)""",
    fix="Bring the figure under the limit (the placement findings say which nodes fall back), or raise the "
        "limit in the contract deliberately.",
    evidence="The memory figures are the static estimate's upper bound (docs/memory.md). max_sram_bytes and "
             "max_estimated_ms gate the compiler's own estimate from target.probe (Vela's for ethos-u: its "
             "source is in the message, \"estimated by Vela 5.2.0 for ...\"); without a probe that built the "
             "model and gave the figure they fail as \"could not be checked\" (docs/ethos-u.md).",
    fields="`subject`: the gate's name. A memory gate's finding names the NPU partition (field `partition`), "
           "the largest tensor live at its peak (in the message) and that tensor's producer (`node`).",
)


def gate_finding(result: GateResult, name: str, limit: int, actual: int | None) -> Finding:
    """A gate of the analysis exceeded; a memory gate's names the NPU partition and the largest
    tensor live at its peak with the tensor's producer node."""
    what = "unknown (shapes not static)" if actual is None else actual
    message = f"{name}: {what} exceeds the limit {limit}"
    if name not in ("max_peak_activation_bytes", "max_weight_bytes"):
        return make_finding("gate-exceeded", message, subject=name)
    npu = [p for p in result.partitions if p.estimated]
    if not npu:
        return make_finding("gate-exceeded", message, subject=name)
    if actual is None:
        part = next((p for p in npu if p.memory_unknown), npu[0])
        message += f" (partition {part.id}: {part.memory_unknown})"
    elif name == "max_peak_activation_bytes":
        part = max(npu, key=lambda p: p.peak_activation_bytes or 0)
    else:
        part = max(npu, key=lambda p: p.weight_bytes or 0)
    first = part.at_peak[0] if part.at_peak else None
    if actual is not None:
        message += f" (estimated upper bound; partition {part.id}"
        if first is not None:
            message += (f", largest live at its peak: {first['tensor']} ({first['bytes']:,} B, "
                        f"from {first['producer'] or 'a graph input'})")
        message += ")"
    return make_finding("gate-exceeded", message, subject=name, partition=part.id,
                        node=first["producer"] if first else None)


def estimate_unchecked(name: str, why: str, limit: float, unit: str) -> Finding:
    """A gate on the compiler's estimate with no figure to check: it fails closed."""
    return make_finding("gate-exceeded", f"{name}: could not be checked ({why}), limit {limit:g} {unit}", subject=name)


def estimate_exceeded(name: str, actual: float, limit: float, unit: str, evidence: str) -> Finding:
    """The compiler's estimate above the gate, naming the estimate's source."""
    return make_finding("gate-exceeded", f"{name}: {actual:,} {unit} exceeds the limit {limit:,} {unit} ({evidence})",
                        subject=name)


def unmeasured(name: str, why: str, limit: float) -> Finding:
    """A quantization gate whose figure was not measured: it fails (never open)."""
    return make_finding("gate-exceeded", f"{name}: not measured ({why}), limit {limit:g}", subject=name)


MEMORY_BUDGET = RuleDoc(
    "memory-budget",
    finds="An NPU partition's estimated memory exceeds the budget the target profile declares. The profile's "
          "`memory` states the target's budget (only where its sources do; none of the built-in profiles "
          "does). Against it: each NPU partition's peak live activation bytes (`sram_bytes`), the NPU "
          "partitions' weight bytes (`weight_bytes`), and the largest peak plus the weights (`dram_bytes`).",
    why="What does not fit the target's memory cannot be placed as predicted. A figure unknown because a size "
        "is not static cannot be checked and fails.",
    example="None general: it depends on the budget a custom profile declares (e.g. a large Conv activation "
            "above its `sram_bytes`).",
    fix="Make the partition's largest live tensors (the message names them) smaller: lower the resolution "
        "or the channels there, or split the work.",
    evidence="The static estimate (docs/memory.md): an upper bound (topological schedule, no in-place reuse, "
             "no tiling), in the profile's `runtime_dtype`; the message ends with the budget's own evidence.",
    fields="`partition`, `constraint` (`memory.<key>`), `actual`, `allowed`; the largest tensors live at the "
           "peak with their producer nodes in the message, the first one as `subject` and `node`.",
)


def memory_findings(estimates: Sequence[PartitionMemory], budget: Mapping[str, Any] | None) -> list[Finding]:
    """``memory-budget`` errors: an NPU partition's peak above ``sram_bytes``, the model's
    weights above ``weight_bytes``, both together above ``dram_bytes``; a figure unknown
    where a budget is declared cannot be checked, and fails (a gate never fails open)."""
    if not budget or not estimates:
        return []
    from npu_gate.placement import memory as memlib

    peak, weights, top = memlib.whole(estimates)
    heaviest = max(estimates, key=lambda e: e.weight_bytes or 0)
    together = None if peak is None or weights is None else peak + weights
    # (budget key, the partition named, the figure, what it is, whether its peak tensors matter)
    checks = [("sram_bytes", e, e.peak_activation_bytes, "peak live activations", True) for e in estimates]
    checks.append(("weight_bytes", heaviest, weights, "weights of the NPU partitions", False))
    checks.append(("dram_bytes", top or heaviest, together, "peak live activations and weights together", True))
    out = []
    for key, at, actual, what, at_peak in checks:
        allowed = budget.get(key)
        if allowed is None or (actual is not None and actual <= allowed):
            continue
        first = at.at_peak[0] if at_peak and at.at_peak else None
        if actual is None:
            unknown = next((e.unknown for e in estimates if e.unknown), None)
            message = (f"partition {at.partition}: {what} unknown ({unknown}): memory.{key} {allowed:,} "
                       "cannot be checked")
        else:
            message = (f"partition {at.partition}: {what} {actual:,} bytes (estimated upper bound) exceed "
                       f"memory.{key} {allowed:,}")
            if first is not None:
                message += "; largest live at the peak: " + ", ".join(
                    f"{t['tensor']} ({t['bytes']:,} B, from {t['producer'] or 'a graph input'})" for t in at.at_peak)
        message += f" (the profile's budget: {budget.get('evidence', '')})"
        out.append(make_finding("memory-budget", message, node=first["producer"] if first else None,
                                subject=first["tensor"] if first else None, partition=at.partition,
                                constraint=f"memory.{key}", actual=actual, allowed=allowed))
    return out


GATE_TIMEOUT = RuleDoc(
    "gate-timeout",
    finds="The run reached its time limit (--timeout) before it finished: the gate fails. `check`, `inspect` "
          "and `check-onnx` stop at `--timeout SECONDS` (default 1800; 0: no limit; per model when several "
          "are gated). The limit is checked between stages, by folding between nodes (a `fold-budget` "
          "finding with constraint `deadline` names the values not computed) and by the compiler probe, "
          "whose timeout is at most the time left; a stage still running 1 s past it is interrupted "
          "(SIGALRM, on Linux and macOS in the main thread), the contract's code stopped with it.",
    why="The stages that did not start are recorded as skipped (reason `timeout: ...`); the verdict rests on "
        "what was analysed, and this error makes sure it is never a pass. A timed-out result is not cached.",
    example="None in the model itself: a huge Loop or constant computed while folding, or a slow compiler, "
            "takes the time.",
    fix="It cannot be waived: raise `--timeout`, or find what is slow (the report's timings; a huge Loop or "
        "constant computed while folding).",
    evidence="The run's own clock against `--timeout`.",
    fields="`subject` is the stage that was running, `constraint` `seconds`, `allowed` the limit in seconds.",
)


def gate_timeout(seconds: float, running: str, after: str) -> Finding:
    """The run's time limit reached during stage ``running``; ``after``: what that leaves out."""
    return make_finding("gate-timeout", f"the run reached its time limit of {seconds:g} s (--timeout) during "
                        f"{running}: {after}; the verdict rests on what was analysed",
                        subject=running, constraint="seconds", allowed=seconds)


DOCS = (GATE_EXCEEDED, MEMORY_BUDGET, GATE_TIMEOUT)

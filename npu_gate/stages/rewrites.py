"""The rewrite stages of a contract check: one ``Rewriting`` per run (``Plan``), then

1. ``prepare`` (``Apply``): apply the contract's ``rewrites`` (the gate then checks the rewritten graph).
2. ``evaluate`` (``Evaluate``): prove them (numerics end to end and per replaced region, placement
   and partitions before/after, CPU reference latency, task metric), and try catalog rewrites
   on every CPU-fallback node, keeping as suggestions only those that reduce CPU nodes or
   partitions AND pass numerics.
3. ``review`` (``Review``): after gates and waivers, one row per CPU-fallback or rewritten node.

Latencies are onnxruntime CPU medians: they go under ``timings`` only and are labelled a
CPU reference. Device figures come only from the user's measurement file.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from npu_gate.contract import device_timings as devtimes
from npu_gate.contract.samples_file import read_samples
from npu_gate.contract.spec import Contract
from npu_gate.errors import ModelError, one_line
from npu_gate.findings.model import replacement_failed
from npu_gate.findings.numerics import numerics_failed
from npu_gate.findings.rewrites import (
    metric_message,
    replacement_mismatch,
    replacement_unverified,
    rewrite_mismatch,
    rewrite_unmatched,
    rewrite_unverified,
    task_metric,
)
from npu_gate.model.samples import make_samples
from npu_gate.model.worker import UserCode
from npu_gate.result.types import GateResult, NodeResult
from npu_gate.rewrites import REWRITES, Applied, apply, apply_matches, copy_model, disjoint
from npu_gate.rewrites.base import GraphView, Match, Rewrite
from npu_gate.rewrites.verify import Check, cpu_latency, verify
from npu_gate.rules import PLACEMENT_RULES
from npu_gate.stages.analyse import analyse_with_findings
from npu_gate.stages.context import Settings, new_result
from npu_gate.stages.run import Run, Stage

MAX_TRIALS = 16  # candidate rewrites tried per check: each costs an analysis and two sessions
LATENCY_RUNS = 20
CPU_LABEL = "CPU reference, not device"
NEW = "emitted by an earlier rewrite"  # a replaced node that is not in the model as given
GONE = "replaced by a later rewrite"  # an emitted node that is not in the checked graph
# The reason a replaced node without findings shows; placements are the static prediction.
NO_REASON = {"npu": "none (predicted on the NPU)", "folded": "none (folded: computed from constants)",
             None: f"none ({NEW})"}
SUMMARY_KEYS = ("node_count", "npu_nodes", "cpu_nodes", "folded_nodes", "npu_partitions", "cpu_partitions",
                "boundary_bytes")


def summary(result: GateResult) -> dict[str, Any]:
    return {k: result.summary.get(k) for k in SUMMARY_KEYS}


def analyse(model: onnx.ModelProto, settings: Settings) -> GateResult:
    """Placement and partitions of ``model`` under the settings' profile, as the gate does it."""
    scratch = new_result("rewrite-candidate", settings.profile, {"source": "onnx", "sha256": None})
    analyse_with_findings(copy_model(model), settings, scratch)
    return scratch


class Plan(Stage):
    """The run's ``Rewriting``, made before any model work: it reads the contract's device
    timings and samples file and imports its metric and replacement code (``Rewriting``)."""

    name = "rewrite_plan"
    limited = False

    def run(self, run: Run) -> None:
        run.rewriting = Rewriting(run.the_contract(), run.the_user())


class Apply(Stage):
    """The contract's rewrites applied to the loaded or exported graph: ``run.model`` is the rewritten one."""

    name = "apply_rewrites"  # its row is ``rewrites``, which ``Evaluate`` completes
    limited = False

    def applies(self, run: Run) -> bool:
        return run.model is not None

    def run(self, run: Run) -> None:
        assert run.model is not None
        run.model = run.the_rewriting().prepare(run.model, run.result)


class Weights(Stage):
    """The external weights the analysis left on disk, read for the models ``Evaluate`` runs
    (``Rewriting.load_weights``), while the export's folder exists and before the probe writes
    the checked graph."""

    name = "rewrite_weights"
    limited = False

    def applies(self, run: Run) -> bool:
        return run.analysis is not None

    def run(self, run: Run) -> None:
        run.the_rewriting().load_weights(run.the_model_path().resolve().parent, run.result)


class Evaluate(Stage):
    name = "rewrites"

    def rows(self, run: Run) -> tuple[str, ...]:
        return run.the_rewriting().pending(run.result)

    def run(self, run: Run) -> None:
        run.the_rewriting().evaluate(run.settings, run.result, run.timings)


class Review(Stage):
    name = "review"
    limited = False

    def run(self, run: Run) -> None:
        run.the_rewriting().review(run.result, run.timings)


class Rewriting:
    """A contract's rewrites, suggestions and review across the stages of its run. ``user``: the
    child process of the contract's code (the run's), which runs the metric and a torch replacement."""

    def __init__(self, contract: Contract, user: UserCode) -> None:
        self.contract = contract
        self.original: onnx.ModelProto | None = None
        self.checked: onnx.ModelProto | None = None  # what the gate analyses
        self.applied: list[Applied] = []
        self.samples: list[dict[str, np.ndarray]] = []
        self._timings: dict[str, float] = {}
        self._base: dict[str, Any] = {}
        self._tried = 0
        self._rejected: list[dict[str, Any]] = []
        default = (contract.numerics.atol, contract.numerics.rtol)
        self.default = default
        self.tolerances = {r.name: (default[0] if r.atol is None else r.atol,
                                    default[1] if r.rtol is None else r.rtol) for r in contract.rewrites}
        # The board's figures (maybe from --device-timings) and the user's code before any model
        # work of this contract. The samples file was read and checked with the contract.
        self.device = devtimes.load(contract.device_timings) if contract.device_timings else None
        samples_file = contract.numerics.samples_file
        rows = contract.file_samples
        if rows is None and samples_file is not None:  # a contract not loaded in full
            rows = read_samples(samples_file, contract.inputs)
        self.file_rows = rows or []
        self.user = user
        _import_user_code(contract, user)

    # 1 ---------------------------------------------------------------------------------
    def prepare(self, model: onnx.ModelProto, result: GateResult) -> onnx.ModelProto:
        if not self.contract.rewrites:
            self.original = self.checked = model  # no copy: big models stay single in memory
            return model
        self.original = copy_model(model)
        try:
            rewritten, self.applied = apply(model, [REWRITES[r.name] for r in self.contract.rewrites])
        except ValueError as exc:  # an emitted name already exists in the model
            raise ModelError(f"{self.contract.path}: rewrites: {exc}") from None
        done = Counter(a.rewrite for a in self.applied)
        for r in self.contract.rewrites:
            if not done[r.name]:
                result.findings.append(rewrite_unmatched(r.name))
        result.stages["rewrites"] = {"status": "ok", "applied": [f"{name} ({n} regions)" for name, n in done.items()]}
        result.log.append("rewrites: " + ("; ".join(
            f"{a.rewrite}: {', '.join(n for n, _ in a.replaced)} -> {', '.join(n for n, _ in a.emitted)}"
            for a in self.applied) or "none matched"))
        self.checked = rewritten
        return rewritten

    def load_weights(self, folder: Path, result: GateResult) -> None:
        """Read the external weights that analysis left on disk (``load_onnx(weights=False)``)
        into the models ``evaluate`` will run with onnxruntime, from the model's ``folder``.
        Called while that folder exists (an export's is temporary), and only when ``evaluate``
        will run them: rewrites applied, a replacement, or CPU-fallback nodes to suggest for."""
        if self.checked is None or self.original is None or not result.analysed:
            return
        samples = self.contract.numerics.samples or self.contract.numerics.samples_file is not None
        runs = (bool(self.applied) or self.contract.replacement is not None
                or (samples and any(n.placement == "cpu" for n in result.nodes)))
        if not runs:
            return
        from onnx.external_data_helper import load_external_data_for_model

        from npu_gate.graph.model_file import external_tensors

        for model in {id(m): m for m in (self.original, self.checked)}.values():
            if external_tensors(model.graph):  # locations were checked when the model was loaded
                load_external_data_for_model(model, str(folder))

    def numerics_path(self, exported: Path, work: Path) -> Path:
        """The file PyTorch is compared with: the rewritten graph when rewrites were applied."""
        if not self.applied or self.checked is None:
            return exported
        path = work / "rewritten.onnx"
        path.write_bytes(self.checked.SerializeToString())
        return path

    def compiled_path(self, source: Path, work: Path) -> Path:
        """The file a compiler probe builds: the graph the gate checks, so the rewritten one
        when rewrites were applied, written to ``work`` with the source's external data
        files copied beside it (their locations are relative to the model)."""
        if not self.applied or self.checked is None:
            return source
        from npu_gate.graph.model_file import copy_model

        folder = work / "probe-model"
        copy_model(source, folder, "original.onnx")
        path = folder / "rewritten.onnx"
        path.write_bytes(self.checked.SerializeToString())
        return path

    # 2 ---------------------------------------------------------------------------------
    def pending(self, result: GateResult) -> tuple[str, ...]:
        """The stage rows ``evaluate`` would fill (for a run that stops before it)."""
        if self.checked is None or self.original is None or not result.analysed:
            return ()
        wanted = {"replacement": self.contract.replacement is not None, "metric": self.contract.metric is not None,
                  "suggestions": True}
        return tuple(stage for stage, runs in wanted.items() if runs)

    def evaluate(self, settings: Settings, result: GateResult, timings: dict[str, float]) -> None:
        if self.checked is None or self.original is None or not result.analysed:
            return  # export failed: nothing was analysed
        self.samples, origin = self._load_samples()
        if self.applied:
            try:
                self._prove(settings, result, timings, origin)
            except Exception as exc:  # onnxruntime cannot run one of the models on the samples
                message = f"rewrite verification: onnxruntime: {one_line(exc)}"
                result.stages["rewrites"].update(status="failed", reason=message)
                result.findings.append(numerics_failed(message))
                # What would have run on the same samples says why it did not, not nothing.
                skipped = {"status": "skipped", "reason": "the rewrite verification failed"}
                wanted = {"replacement": self.contract.replacement is not None,
                          "metric": self.contract.metric is not None, "suggestions": True}
                result.stages.update({stage: dict(skipped) for stage, runs in wanted.items() if runs})
                return
        if self.contract.replacement is not None:
            self._replacement(settings, result, timings)
        if self.contract.metric is not None and result.metric is None:
            reason = ("no samples" if not self.samples else
                      "nothing to compare: no rewrite was applied and no replacement model was given")
            result.stages["metric"] = {"status": "skipped", "reason": reason}
        if not self.samples:
            result.stages["suggestions"] = {"status": "skipped",
                                            "reason": "no samples (numerics.samples is 0, no samples_file)"}
            return
        try:
            self._suggest(settings, result, timings)
            if self.applied or any(n.placement == "cpu" for n in result.nodes):
                timings["cpu_reference_s"] = cpu_latency(self.checked, self.samples[0], LATENCY_RUNS)
        except Exception as exc:  # suggestions are advice: never stop the gate for them
            result.suggestions = []
            result.stages["suggestions"] = {"status": "failed", "reason": f"onnxruntime: {one_line(exc)}"}

    def _load_samples(self) -> tuple[list[dict[str, np.ndarray]], dict[str, Any]]:
        spec = self.contract.numerics
        samples = make_samples(self.contract.inputs, spec.samples, spec.seed)
        origin: dict[str, Any] = {"seeded": len(samples), "seed": spec.seed, "file": None, "file_samples": 0}
        if spec.samples_file is not None:
            samples.extend(self.file_rows)
            origin["file"] = spec.samples_file.name
            origin["file_samples"] = len(self.file_rows)
        return samples, origin

    def _prove(self, settings: Settings, result: GateResult, timings: dict[str, float],
               origin: dict[str, Any]) -> None:
        assert self.original is not None and self.checked is not None
        before = analyse(self.original, settings)
        check: dict[str, Any] = {
            "applied": list(dict.fromkeys(a.rewrite for a in self.applied)), "samples": origin,
            "before": summary(before), "after": summary(result), "verified": False,  # until it is
        }
        result.rewrite_check = check
        checks: list[Check] = []
        failure: Exception | None = None
        if self.samples:
            # onnxruntime may fail to run a model: what was applied is still reported (then
            # the caller reports the failure), only the proof is missing.
            try:
                ver = verify(self.original, self.checked, self.applied, self.samples, self.tolerances, self.default)
                checks = ver.checks
                check["verified"] = True
                timings["cpu_reference_original_s"] = cpu_latency(self.original, self.samples[0], LATENCY_RUNS)
                if self.contract.metric is not None:
                    from npu_gate.rewrites.metric import evaluate as run_metric

                    result.metric = run_metric(self.contract.metric, self.user, ver.reference,
                                               ver.candidate, self.samples)
                    if not result.metric["passed"]:
                        result.findings.append(task_metric(result.metric))
            except Exception as exc:
                failure = exc
        else:
            result.stages["rewrites"]["reason"] = "not verified: numerics.samples is 0 and no samples_file"
            result.findings.append(rewrite_unverified(check["applied"]))
        for c in checks:
            if not c.passed:
                result.findings.append(rewrite_mismatch(c, c.rewrite or ", ".join(check["applied"])))
        before_nodes = _by_output(before.nodes)
        after_nodes = _by_output(result.nodes)
        entries = []
        for name in check["applied"]:
            group = [a for a in self.applied if a.rewrite == name]
            atol, rtol = self.tolerances.get(name, self.default)
            entries.append({
                "name": name,
                "exact": REWRITES[name].exact,
                "atol": atol,
                "rtol": rtol,
                "nodes": [n for a in group for n, _ in a.replaced],
                "emitted": [n for a in group for n, _ in a.emitted],
                "placement_before": [_placement(before_nodes, t, n, op) for a in group
                                     for (n, op), t in zip(a.replaced, a.replaced_tensors, strict=True)],
                "placement_after": [_placement(after_nodes, t, n, op) for a in group
                                    for (n, op), t in zip(a.emitted, a.emitted_tensors, strict=True)],
                "verification": [c.to_dict() for c in checks if c.kind == "output" or c.rewrite == name],
            })
        result.rewrites = entries
        if failure is not None:
            raise failure

    def _replacement(self, settings: Settings, result: GateResult, timings: dict[str, float]) -> None:
        """The user's own replacement model: placement before/after, end-to-end numerics, latency."""
        from npu_gate.rewrites import replacement as repl

        assert self.original is not None and self.contract.replacement is not None
        loaded = repl.load(self.user, self.contract.replacement)
        result.log.extend(loaded.log)
        entry: dict[str, Any] = {"model": loaded.info, "verification": []}
        result.replacement = entry
        if loaded.model is None:
            result.stages["replacement"] = {"status": "failed", "reason": loaded.error}
            result.findings.append(replacement_failed(loaded.error))
            return
        entry["before"] = summary(analyse(self.original, settings))
        entry["after"] = summary(analyse(loaded.model, settings))
        if not self.samples:
            result.stages["replacement"] = {"status": "ok", "reason": "not verified: no samples"}
            result.findings.append(replacement_unverified())
            return
        try:
            checks, reference, candidate = repl.compare(self.original, loaded.model, self.samples, *self.default)
            timings.setdefault("cpu_reference_original_s", cpu_latency(self.original, self.samples[0], LATENCY_RUNS))
            timings["cpu_reference_replacement_s"] = cpu_latency(loaded.model, self.samples[0], LATENCY_RUNS)
        except Exception as exc:
            message = f"replacement verification: onnxruntime: {one_line(exc)}"
            result.stages["replacement"] = {"status": "failed", "reason": message}
            result.findings.append(numerics_failed(message))
            return
        result.stages["replacement"] = {"status": "ok"}
        entry["verification"] = [c.to_dict() for c in checks]
        for c in checks:
            if not c.passed:
                result.findings.append(replacement_mismatch(c))
        if self.contract.metric is not None and not self.applied:  # the metric judges one candidate
            from npu_gate.rewrites.metric import evaluate as run_metric

            result.metric = run_metric(self.contract.metric, self.user, reference, candidate,
                                       self.samples)
            if not result.metric["passed"]:
                result.findings.append(task_metric(result.metric))

    def _suggest(self, settings: Settings, result: GateResult, timings: dict[str, float]) -> None:
        """Per catalog rewrite: all its matches on CPU-fallback nodes at once; then, if some
        emitted nodes stay on CPU, the matches that do not; if numerics fail, each alone."""
        assert self.checked is not None
        on_npu = measured_on_npu(result)  # decide = measured: the compiler ran these, nothing to fix
        cpu = {n.outputs[0]["name"]: n.name for n in result.nodes
               if n.placement == "cpu" and n.outputs and n.name not in on_npu}
        if not cpu:
            return  # nothing falls back: no suggestions section at all
        self._base = summary(result)
        self._tried, self._rejected = 0, []
        suggestions: list[dict[str, Any]] = []
        view = GraphView(self.checked)
        skipped = 0
        for rewrite in REWRITES.values():
            matches = [m for m in disjoint(rewrite.find(view))
                       if any(view.nodes[i].output[0] in cpu for i in m.nodes if view.nodes[i].output)]
            attempt = matches
            while attempt:
                if self._tried >= MAX_TRIALS or _late(settings):
                    skipped += len(attempt)
                    break
                outcome, detail = self._trial(settings, view, rewrite, attempt, cpu, timings, len(suggestions))
                if outcome == "ok":
                    suggestions.append(detail)
                    break
                if outcome == "still_cpu" and 0 < len(detail) < len(attempt):
                    attempt = detail  # retry with the matches whose emitted nodes are all supported
                elif outcome == "numerics" and len(attempt) > 1:
                    for single in attempt:  # find the ones that pass alone
                        if self._tried >= MAX_TRIALS or _late(settings):
                            skipped += 1
                            continue
                        one, found = self._trial(settings, view, rewrite, [single], cpu, timings, len(suggestions))
                        if one == "ok":
                            suggestions.append(found)
                    break
                else:
                    break
        result.suggestions = suggestions
        stage: dict[str, Any] = {"status": "ok", "tried": self._tried, "listed": len(suggestions),
                                 "rejected": self._rejected}
        if skipped:
            why = "the run reached its time limit" if _late(settings) else f"limit {MAX_TRIALS} trials"
            stage["reason"] = f"{skipped} more candidate region(s) not tried ({why})"
        result.stages["suggestions"] = stage

    def _trial(self, settings: Settings, view: GraphView, rewrite: Rewrite, matches: list[Match],
               cpu: dict[str, str], timings: dict[str, float], index: int) -> tuple[str, Any]:
        """Apply ``matches`` together and judge them: ("ok", suggestion), ("still_cpu", the
        matches whose emitted nodes are all supported), ("no_gain" | "numerics", None)."""
        assert self.checked is not None
        self._tried += 1
        base = self._base
        candidate, applied = apply_matches(self.checked, rewrite, matches)
        analysed = analyse(candidate, settings)
        after = summary(analysed)
        placed = _by_output(analysed.nodes)
        where = {"rewrite": rewrite.name, "node": matches[0].anchor, "regions": len(matches)}
        bad = [[n for (n, _), t in zip(a.emitted, a.emitted_tensors, strict=True)
                if t in placed and placed[t].placement == "cpu"] for a in applied]
        if any(bad):  # the rewrite must make the node supported, not move the fallback
            still = sorted({n for names in bad for n in names})
            shown = ", ".join(still[:5]) + (f" and {len(still) - 5} more" if len(still) > 5 else "")
            self._rejected.append(where | {"reason": f"still on CPU: {shown}"})
            return "still_cpu", [m for m, names in zip(matches, bad, strict=True) if not names]
        if not _better(base, after):
            self._rejected.append(where | {"reason": f"no gain: cpu nodes {base['cpu_nodes']} -> {after['cpu_nodes']}, "
                                                     f"partitions {_parts(base)} -> {_parts(after)}"})
            return "no_gain", None
        tol = self.tolerances.get(rewrite.name, self.default)
        ver = verify(self.checked, candidate, applied, self.samples, {rewrite.name: tol}, self.default)
        failed = [c for c in ver.checks if not c.passed]
        if failed:
            f = failed[0]
            self._rejected.append(where | {"reason": f"numerics: {f.kind} {f.where} max abs error "
                                                     f"{_num(f.max_abs_err)} (atol {f.atol:g}, rtol {f.rtol:g})"})
            return "numerics", None
        task = None
        if self.contract.metric is not None:  # an approximation is judged on the task too
            from npu_gate.rewrites.metric import evaluate as run_metric

            task = run_metric(self.contract.metric, self.user, ver.reference, ver.candidate, self.samples)
            if not task["passed"]:
                self._rejected.append(where | {"reason": metric_message(task)})
                return "numerics", None
        key = f"cpu_reference_suggestion_{index}_s"
        timings[key] = cpu_latency(candidate, self.samples[0], LATENCY_RUNS)
        fixes = [cpu[view.nodes[i].output[0]] for m in matches for i in sorted(m.nodes)
                 if view.nodes[i].output and view.nodes[i].output[0] in cpu]
        return "ok", {
            "rewrite": rewrite.name, "exact": rewrite.exact, "node": matches[0].anchor, "regions": len(matches),
            "fixes": fixes, "nodes": [n for a in applied for n, _ in a.replaced],
            "emitted": [n for a in applied for n, _ in a.emitted],
            "before": base, "after": after,
            "verification": [c.to_dict() for c in ver.checks], "timing": key,
            "contract": {"rewrites": [rewrite.name]},
        } | ({"metric": task} if task is not None else {})

    # 3 ---------------------------------------------------------------------------------
    def review(self, result: GateResult, timings: dict[str, float]) -> None:
        """One row per rewritten or CPU-fallback node; needs waivers applied (after _finish)."""
        if self.checked is None or not result.analysed:
            return
        self._timings = timings
        rows: list[dict[str, Any]] = []
        checks = {(e["name"], v["where"]): v for e in result.rewrites for v in e["verification"]
                  if v["kind"] == "region"}
        for entry in result.rewrites:
            for before in entry["placement_before"]:
                region = next((a for a in self.applied if a.rewrite == entry["name"]
                               and before["node"] in [n for n, _ in a.replaced]), None)
                check = checks.get((entry["name"], region.output)) if region else None
                # A rewrite may replace what an earlier one emitted (decompose, then fuse): such
                # nodes have no placement before, or none after.
                after = Counter(p["placement"] or GONE for p in entry["placement_after"]
                                if region and p["node"] in [n for n, _ in region.emitted])
                rows.append(self._row(
                    result, before["node"], before["op_type"], None,
                    placement=f"{before['placement'] or NEW} → " + ", ".join(
                        f"{k} {v}" for k, v in sorted(after.items())),
                    reason="; ".join(before["reasons"]) or NO_REASON[before["placement"]],
                    constraints=[], strategy=f"rewrite: {entry['name']}", rewrite=entry["name"],
                    verification=check, cpu=["cpu_reference_original_s", "cpu_reference_s"]))
        suggested: dict[str, dict[str, Any]] = {}
        for sug in result.suggestions:
            for node in sug["fixes"]:
                suggested.setdefault(node, sug)
        on_npu = measured_on_npu(result)
        for n in result.nodes:
            if n.placement != "cpu":
                continue
            mine = [f for f in result.findings if f.node == n.name and f.rule in PLACEMENT_RULES]
            constraints = list(dict.fromkeys(f.constraint for f in mine if f.constraint))  # input and output
            reason = "; ".join(n.reasons)
            s = suggested.get(n.name)
            waived = [f for f in mine if f.waived]
            placement = "cpu"
            # The compiler's placement decides (decide = measured) and it ran the node on the
            # NPU: the prediction was wrong, there is nothing to leave on CPU or to rewrite.
            # A waiver is the team's recorded decision, so it wins over a suggestion (which
            # stays listed under Suggested rewrites).
            if n.name in on_npu:
                placement = f"cpu predicted, measured {on_npu[n.name]}"
                strategy = "none needed: measured on the NPU"
            elif mine and len(waived) == len(mine):
                strategy = f"waiver: {waived[0].waiver_reason}"
            elif s is not None:
                strategy = f"rewrite: {s['rewrite']} (suggested, not applied)"
            elif not any(f.severity == "error" for f in mine if not f.waived):
                strategy = "leave on CPU"
            else:
                strategy = "change the model"
            suggestion = s if strategy.startswith("rewrite") else None
            worst = None if suggestion is None else max(suggestion["verification"],
                                                        key=lambda v: v["max_abs_err"] or 0.0)
            row = self._row(result, n.name, n.op_type, n.partition, placement=placement, reason=reason,
                            constraints=constraints, strategy=strategy,
                            rewrite=None if suggestion is None else suggestion["rewrite"], verification=worst,
                            cpu=["cpu_reference_s"] + ([suggestion["timing"]] if suggestion else []))
            rows.append(row)
        result.review = rows
        if self.device is not None:
            nodes = {n.name for n in result.nodes} | {r["node"] for r in rows}  # rows: rewritten nodes too
            unmatched = self.device.unmatched(nodes, {str(p.id) for p in result.partitions}, self.contract.name)
            result.device_timings = {"path": self.device.path, "source": self.device.source,
                                     "entries": len(self.device.entries),
                                     "unmatched": [{"scope": t.scope, "key": t.key} for t in unmatched]}

    def _row(self, result: GateResult, node: str, op_type: str, partition: int | None, *, placement: str,
             reason: str, constraints: list[str], strategy: str, rewrite: str | None,
             verification: dict[str, Any] | None, cpu: list[str]) -> dict[str, Any]:
        device = self.device.lookup(node, partition, self.contract.name) if self.device else None
        return {
            "node": node, "op_type": op_type, "placement": placement, "reason": reason,
            "constraints": constraints, "strategy": strategy, "rewrite": rewrite,
            "verification": None if verification is None else {
                k: verification.get(k) for k in ("where", "kind", "max_abs_err", "max_rel_err", "atol", "rtol",
                                                 "passed")},
            "latency": {
                "cpu_reference": [k for k in cpu if k in self._timings] or None,
                "cpu_reference_label": CPU_LABEL,
                "device": None if device is None else device.to_dict() | {"source": self.device.source
                                                                          if self.device else None},
            },
        }


def _late(settings: Settings) -> bool:
    """Whether the run's time limit has passed: no more candidate rewrites are tried."""
    return settings.deadline is not None and settings.deadline.passed()


def measured_on_npu(result: GateResult) -> dict[str, str]:
    """Nodes the compiler ran on the NPU when its placement decides (``target.probe.decide``
    measured and the build succeeded): name -> ``npu`` or ``npu (as OP)``. Empty otherwise."""
    if "measured" not in result.summary:
        return {}
    nodes = result.stages.get("probe", {}).get("nodes", [])
    return {n["name"]: "npu" + (f" (as {n['became']})" if n.get("became") else "")
            for n in nodes if n.get("runs_on") == "npu"}


def _better(base: dict[str, Any], after: dict[str, Any]) -> bool:
    fewer_cpu = after["cpu_nodes"] < base["cpu_nodes"] and _parts(after) <= _parts(base)
    fewer_parts = _parts(after) < _parts(base) and after["cpu_nodes"] <= base["cpu_nodes"]
    return fewer_cpu or fewer_parts


def _parts(s: dict[str, Any]) -> int:
    return int(s["npu_partitions"]) + int(s["cpu_partitions"])


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3g}"


def _by_output(nodes: list[NodeResult]) -> dict[str, NodeResult]:
    return {n.outputs[0]["name"]: n for n in nodes if n.outputs}


def _placement(nodes: dict[str, NodeResult], tensor: str, name: str, op_type: str) -> dict[str, Any]:
    found = nodes.get(tensor)
    # The region output keeps its name: the node producing it in the other graph may be
    # another one (an earlier rewrite's emitted node, a later rewrite's fused op).
    if found is None or found.op_type != op_type:
        return {"node": name, "op_type": op_type, "placement": None, "reasons": [], "partition": None}
    return {"node": name, "op_type": op_type, "placement": found.placement, "reasons": found.reasons,
            "partition": found.partition}


def _import_user_code(contract: Contract, user: UserCode) -> None:
    """The metric and a torch replacement's factory import from the contract folder before any
    model work (the contract check found their modules; only importing them, which runs the
    user's code, tells whether they import and have the callable). What the user's code raises
    when it runs stays a finding."""
    import importlib.util

    spec = contract.replacement
    # The ONNX-only install: name the missing extra, as `check` does, rather than the factory's
    # module failing to import (`diff` and `check-onnx` reach this without `check`'s test).
    if spec is not None and spec.torch is not None and importlib.util.find_spec("torch") is None:
        raise ModelError(f"{contract.path}: replacement.torch needs PyTorch: pip install 'npu-gate[torch]'")
    if contract.metric is not None or (spec is not None and spec.torch is not None):
        user.imports()  # in the child process, as the code runs later

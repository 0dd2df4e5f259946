"""Run a compiler on a model in a child process and turn what it did into a ProbeResult.

The compiler runs in its own venv's Python (its pins conflict with ours), in a child
process with a timeout, so a SIGSEGV or a hang is a verdict about the model and not a
crash of npu_gate. The child's file descriptors 1 and 2 go to a log file, which catches
what the compiler's C code prints too. TMPDIR and the working folder point into the
probe's own work folder, so the compiler's temporary files stay there. The child is as isolated
as the model worker (a venv's Python is code the gate does not trust): the same environment
(``isolation.child_environment``: no token, no secret-looking variables), its own session, and
when the gate runs as root another, unprivileged user (``isolation.child_user``).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from npu_gate.errors import GateError
from npu_gate.placement.adapters import partitions_with_adapters
from npu_gate.probe.base import ChildRun, Compiler, CompilerOutput, QuantRequest, clean_log
from npu_gate.probe.mapping import (
    accuracy_layers,
    agreement,
    compare_adapters,
    edge_ops,
    io_adapter_ops,
    map_nodes,
    note_compiler,
)
from npu_gate.process.isolation import ChildUser, child_environment, child_user, hide_environment, open_way, reclaim
from npu_gate.result.probe import CRASHED, FAILED, OK, SPLIT, Attempt, ProbeNode, ProbeResult
from npu_gate.result.types import CPU, NPU, GateResult, InputEntry

if TYPE_CHECKING:  # batch imports this module
    from npu_gate.probe.batch import BatchChild

DRIVERS = Path(__file__).resolve().parent / "drivers"
PREPARATION = "preparation.json"  # how the model was prepared for the compiler, in a kept work folder
# Environment that would make the compiler's Python pick up our packages instead of its own.
_SCRUB = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV")


def child_env(work: Path, user: ChildUser | None = None) -> dict[str, str]:
    """The driver's environment: the model worker's (no token, no secrets) without what would point
    its Python at our packages; another ``user`` gets a home it can write in (the work folder's tmp)."""
    env = {k: v for k, v in child_environment().items() if k not in _SCRUB}
    env.update(TMPDIR=str(work / "tmp"), PYTHONUNBUFFERED="1", PYTHONNOUSERSITE="1")
    if user is not None and user.uid is not None:
        env["HOME"] = str(work / "tmp")
    return env


def driver_user(python: Path, *folders: Path, model: Path | None = None) -> ChildUser:
    """Who the driver runs as (``isolation.child_user``): its venv's Python, the drivers and the
    ``model`` must be readable by other users; ``folders``, which the driver writes in, are handed
    to that user."""
    readable = [os.path.abspath(python), str(DRIVERS), *([str(model)] if model is not None else [])]
    if model is not None and hasattr(os, "geteuid") and os.geteuid() == 0:
        open_way(model.parent)  # the model is in the gate's temporary folders: passable, not listable
    user = child_user(readable, [str(f) for f in folders])
    hide_environment()
    return user


def write_request(work: Path, request: dict[str, Any]) -> tuple[Path, Path, Path]:
    """The work folder with its request; the paths of request, response and log."""
    work.mkdir(parents=True, exist_ok=True)
    (work / "tmp").mkdir(exist_ok=True)
    request_path, response_path, log_path = work / "request.json", work / "response.json", work / "compiler.log"
    request_path.write_text(json.dumps(request, indent=2), encoding="utf-8")
    return request_path, response_path, log_path


def read_run(work: Path, returncode: int | None, seconds: float, timeout: float | None = None) -> ChildRun:
    """A finished run from its work folder: the cleaned log and the driver's response."""
    raw = (work / "compiler.log").read_bytes().decode("utf-8", errors="replace") \
        if (work / "compiler.log").exists() else ""
    try:
        response = json.loads((work / "response.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        response = {}
    return ChildRun(returncode=returncode, log=clean_log(raw), response=response, seconds=seconds,
                    timed_out=timeout is not None, timeout=timeout)


def run_child(compiler: Compiler, python: Path, request: dict[str, Any], work: Path, timeout: float) -> ChildRun:
    """Run the compiler's driver once in ``work``; never raises for what the child does."""
    request_path, response_path, log_path = write_request(work, request)
    model = request.get("model")
    user = driver_user(python, work, work / "tmp", model=Path(model) if isinstance(model, str) else None)
    env = child_env(work, user)
    argv = [os.path.abspath(python), "-u", str(DRIVERS / compiler.driver), str(request_path), str(response_path)]
    start = time.perf_counter()
    timed_out = False
    with open(log_path, "wb") as log:
        try:
            proc = subprocess.Popen(argv, cwd=work, env=env, stdin=subprocess.DEVNULL, stdout=log,
                                    stderr=subprocess.STDOUT, start_new_session=True, **user.popen_args())
        except OSError as exc:
            raise GateError(f"{python}: cannot run the {compiler.product} Python: {exc.strerror}") from None
        try:
            returncode: int | None = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            kill_group(proc)
            returncode = None
        except BaseException:  # Ctrl-C: the child is in its own session and would not get it
            kill_group(proc)
            raise
    reclaim(user, work)  # another user's folder: the gate's again before it reads the driver's files
    return read_run(work, returncode, time.perf_counter() - start, timeout if timed_out else None)


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)  # the child and anything it started, nothing else
    proc.wait()


def status_of(run: ChildRun, output: CompilerOutput) -> tuple[str, str | None]:
    """ok / failed / crashed, with the error a reviewer should read."""
    stage = run.response.get("stage", "start")
    if run.timed_out:
        limit = run.timeout if run.timeout is not None else run.seconds
        return CRASHED, f"timed out after {round(limit, 1):g} s (stage: {stage})"
    if run.signal is not None:
        try:
            name = signal.Signals(run.signal).name
        except ValueError:
            name = f"signal {run.signal}"
        return CRASHED, f"the compiler process was killed by {name} (stage: {stage})"
    if run.response.get("status") == OK and output.rows:
        return OK, None
    if run.response.get("status") == OK:
        return FAILED, output.error or "the compiler reported success but printed no op table"
    error = output.error or run.response.get("error")
    if error is None:
        tail = next((line for line in reversed(run.log) if line.strip()), "no output")
        error = f"exit code {run.returncode} (stage: {stage}): {tail.strip()}"
    return FAILED, error


def probe(
    model: Path,
    compiler: Compiler,
    target: str,
    python: Path,
    *,
    inputs: dict[str, list[int]] | None = None,
    prediction: GateResult | None = None,
    options: dict[str, Any] | None = None,
    timeout: float | None = None,
    keep: Path | None = None,
    child: BatchChild | None = None,
    venv_key: str | None = None,
    target_key: str | None = None,
    quantization: QuantRequest | None = None,
) -> ProbeResult:
    """Probe ``model`` with ``compiler`` for ``target``; ``keep`` keeps the work folder there.

    ``prediction``: the gate's own analysis of this model (with these ``inputs``), which the
    compiler's placement is compared with node by node; None: no comparison.

    ``child``: a running ``batch.BatchChild`` to build in, instead of a new process per attempt.
    ``venv_key``: where a contract named the venv (file and key), for the error when it is missing;
    without it the error speaks of ``--venv``. ``target_key``: the same for the target (a
    contract's ``target.probe.target``); without it the error speaks of ``--target``.
    ``quantization``: a quantized build (``--quantize``); the compiler refuses a mode it cannot build.
    """
    if not model.is_file():
        raise GateError(f"{model}: no such model file")
    if quantization is not None:
        compiler.check_quant_mode(quantization.mode)
    check_python(compiler, python, venv_key)
    start = time.perf_counter()
    if prediction is not None:
        _check_inputs(model, prediction.inputs, inputs or {})
    inputs = complete_inputs(model, prediction, inputs or {})

    work = keep if keep is not None else Path(tempfile.mkdtemp(prefix="npu-gate-probe-"))
    # a kept folder holds this probe's attempts only: replay() reads every attempt-N in it
    for stale in work.glob("attempt-*"):
        if stale.is_dir():
            shutil.rmtree(stale)
    options = dict(options or {})
    runs: list[tuple[ChildRun, CompilerOutput, Attempt]] = []
    try:
        # the samples a quantized build reads, written once for every attempt (not in Attempt.options)
        quant_options = compiler.quantization_options(quantization, work / "samples") if quantization else {}
        while True:
            attempt_dir = work / f"attempt-{len(runs) + 1}"
            request = compiler.request(model.resolve(), target, inputs or {}, {**options, **quant_options})
            if child is not None:
                run = child.run(request, attempt_dir)
            else:
                run = run_child(compiler, python, request, attempt_dir, timeout or compiler.timeout_s)
            _write_json(attempt_dir / "exit.json", {"returncode": run.returncode, "timed_out": run.timed_out,
                                                    "seconds": run.seconds, "options": options,
                                                    "quantization": quantization.describe() if quantization else None})
            runs.append(_judge(compiler, run, attempt_dir, options))
            output, attempt = runs[-1][1], runs[-1][2]
            if attempt.status == FAILED and run.response.get("stage") == "config":
                # the compiler refused its configuration (an unknown --target): our input, not the model
                where = target_key or f"--target {target}"
                raise GateError(f"{where}: {compiler.product} refused the configuration: {attempt.error}")
            retry = compiler.retry_options(output, options) if attempt.status == FAILED and len(runs) == 1 else None
            if retry is None:
                break
            options = retry
    finally:
        if keep is None:
            shutil.rmtree(work, ignore_errors=True)
    result = assemble(model.name, compiler, target, prediction, runs,
                      quantization.describe() if quantization else None)
    if result.compiler["version"] is None:  # it stopped before saying: the venv's installed one
        result.compiler["version"] = compiler.installed_version(python.parent.parent)
    result.timings = {"predict_s": round(prediction.timings.get("total_s", 0.0), 3) if prediction else 0.0,
                      "compiler_s": round(sum(a.seconds for _, _, a in runs), 3),
                      "total_s": round(time.perf_counter() - start, 3), **result.timings}
    return result


def check_python(compiler: Compiler, python: Path, venv_key: str | None = None) -> None:
    """The compiler's venv Python must exist (exit 2 naming ``venv_key``, else ``--venv``)."""
    if not python.exists() and venv_key is not None:
        raise GateError(f"{venv_key}: no {compiler.product} environment there (no {python}); create it with "
                        f"`npu-gate probe setup {compiler.name} {python.parent.parent}`")
    if not python.exists():
        raise GateError(f"{python}: no {compiler.product} environment there; create one with "
                        f"`npu-gate probe setup {compiler.name} VENV` and pass --venv VENV")


def not_built(model: Path, compiler: Compiler, target: str, python: Path, rule: str, error: str, message: str, *,
              prediction: GateResult | None = None, quantization: QuantRequest | None = None,
              venv_key: str | None = None) -> ProbeResult:
    """A probe that stopped before the compiler ran, on the user's model (QNN: its QDQ preparation
    raised): status failed with ``error``, one ``rule`` finding (an error) saying ``message``, the
    prediction's nodes with no actual placement, an empty summary (nothing was compared) and no
    attempt. The venv is checked as ``probe`` checks it (a missing one is exit 2, not a result)."""
    check_python(compiler, python, venv_key)
    result = ProbeResult(
        model={"path": model.name, "sha256": prediction.model.get("sha256") if prediction else None},
        compiler={"name": compiler.product, "version": compiler.installed_version(python.parent.parent),
                  "target": target, "plugin": compiler.name},
        status=FAILED, predicted_with=_predicted_with(prediction), error=error,
        nodes=[ProbeNode(name=n.name, op_type=n.op_type, predicted=n.placement, actual=None)
               for n in (prediction.nodes if prediction else [])],
        findings=[{"rule": rule, "severity": "error", "message": message}],
        log=[f"npu-gate: {message}"],
    )
    if quantization is not None:
        result.quantization = {**quantization.describe(), "accuracy": None}
    result.timings = {"predict_s": round(prediction.timings.get("total_s", 0.0), 3) if prediction else 0.0,
                      "compiler_s": 0.0}
    result.timings["total_s"] = result.timings["predict_s"]
    return result


def replay(model: Path, compiler: Compiler, target: str, work: Path,
           prediction: GateResult | None = None) -> ProbeResult:
    """Rebuild a ProbeResult from a kept work folder (``--keep-work``) without running anything;
    ``prediction``: as for ``probe``, with the shapes the compiler was given (``requested_inputs``)."""
    runs = []
    for attempt_dir in sorted(work.glob("attempt-*"), key=lambda p: int(p.name.split("-")[1])):
        exit_info = json.loads((attempt_dir / "exit.json").read_text(encoding="utf-8"))
        raw = (attempt_dir / "compiler.log").read_bytes().decode("utf-8", errors="replace")
        response_path = attempt_dir / "response.json"
        response = json.loads(response_path.read_text(encoding="utf-8")) if response_path.exists() else {}
        run = ChildRun(returncode=exit_info["returncode"], log=clean_log(raw), response=response,
                       seconds=exit_info["seconds"], timed_out=exit_info["timed_out"])
        runs.append(_judge(compiler, run, attempt_dir, exit_info["options"]))
    if not runs:
        raise GateError(f"{work}: no attempt-N folders to replay")
    # the quantized build's request (no such key: recorded before probe-1.4, a default build)
    request = json.loads((work / "attempt-1" / "exit.json").read_text(encoding="utf-8")).get("quantization")
    result = assemble(model.name, compiler, target, prediction, runs, request)
    if (work / PREPARATION).is_file():
        result.preparation = json.loads((work / PREPARATION).read_text(encoding="utf-8"))
    return result


def requested_inputs(work: Path) -> dict[str, list[int]]:
    """The input shapes a kept probe gave the compiler (its first attempt's request)."""
    request_path = work / "attempt-1" / "request.json"
    request = json.loads(request_path.read_text(encoding="utf-8")) if request_path.exists() else {}
    return {i["name"]: i["shape"] for i in request.get("inputs") or []}


def complete_inputs(model: Path, prediction: GateResult | None,
                    given: dict[str, list[int]]) -> dict[str, list[int]]:
    """The shapes to give the compiler: none when none are given (it reads the model's own);
    else every model input in the model's order, the given ones with their given shape and the
    others with the model's static shape (a compiler told some inputs ignores the rest: a
    recurrent state input left out fails the build with no value info for it)."""
    if not given:
        return {}
    own: list[tuple[str, list[Any] | None]] = []
    if prediction is not None:
        own = [(i["name"], i["model_shape"] if i["static"] else None) for i in prediction.inputs]
    else:
        from npu_gate.graph.facts import tensor_info_from_type
        from npu_gate.graph.model_file import load_onnx

        onnx_model, _ = load_onnx(model, weights=False)
        weights = {t.name for t in onnx_model.graph.initializer}
        for value in onnx_model.graph.input:
            if value.name in weights and onnx_model.ir_version < 4:
                continue  # before IR 4 an initializer listed as an input is a weight
            dims = tensor_info_from_type(value.name, value.type).shape
            static = dims is not None and all(isinstance(d, int) for d in dims)
            own.append((value.name, list(dims) if static and dims is not None else None))
    complete: dict[str, list[int]] = {}
    for name, shape in own:
        if name in given:
            complete[name] = given[name]
        elif shape is not None:
            complete[name] = [int(d) for d in shape]
    complete.update({name: shape for name, shape in given.items() if name not in complete})
    return complete


def _check_inputs(model: Path, model_inputs: list[InputEntry], given: dict[str, list[int]]) -> None:
    """--inputs must name model inputs, and every dynamic input needs one (compilers want static shapes)."""
    names = [i["name"] for i in model_inputs]
    problems = [f"--inputs {name}: {model.name} has no input {name} (inputs: {', '.join(names) or 'none'})"
                for name in given if name not in names]
    for info in model_inputs:
        if not info["static"] and info["name"] not in given:
            shape = ", ".join("?" if not isinstance(d, int) else str(d) for d in info["model_shape"] or [])
            problems.append(f"{model.name}: input {info['name']} has dynamic shape [{shape}]: "
                            f"give a static one with --inputs {info['name']}:DIMS")
    if problems:
        raise GateError(*problems)


def _judge(compiler: Compiler, run: ChildRun, work: Path,
           options: dict[str, Any]) -> tuple[ChildRun, CompilerOutput, Attempt]:
    output = compiler.parse(run, work)
    status, error = status_of(run, output)
    return run, output, Attempt(options=dict(options), status=status, error=error,
                                returncode=run.returncode, seconds=round(run.seconds, 3))


def assemble(model_name: str, compiler: Compiler, target: str, predicted_result: GateResult | None,
             runs: list[tuple[ChildRun, CompilerOutput, Attempt]],
             quantization: dict[str, Any] | None = None) -> ProbeResult:
    """The probe result from the last run, compared with npu_gate's own prediction;
    ``quantization``: the quantized build's request (``QuantRequest.describe``), None for the default build."""
    run, output, last = runs[-1]
    attempts = [a for _, _, a in runs]
    result = ProbeResult(
        model={"path": model_name, "sha256": predicted_result.model.get("sha256") if predicted_result else None},
        compiler={"name": compiler.product, "version": output.version, "target": target, "plugin": compiler.name},
        status=last.status,
        predicted_with=_predicted_with(predicted_result),
        error=last.error,
        rewrites=output.rewrites,
        attempts=attempts,
        log=_joined_logs(runs),
    )
    if output.backend:
        result.compiler["backend"] = output.backend
    originals = [(n.name, n.op_type) for n in predicted_result.nodes] if predicted_result else []
    # a node the profile splits is predicted "split" (probe-1.6): it agrees with a compiler split
    predicted = {n.name: SPLIT if n.split is not None else n.placement
                 for n in predicted_result.nodes} if predicted_result else {}
    counts = _predicted_partitions(predicted_result)  # the prediction's, whatever the compiler did
    if last.status == OK:
        graph_names = compiler_graph_names(compiler, predicted_result)
        tensors = _node_tensors(predicted_result)
        result.nodes, result.segments = map_nodes(originals, predicted, output, graph_names, tensors)
        note_compiler(result.nodes, output)
        for node in result.nodes:
            if node.name in output.node_reasons:
                node.reason = output.node_reasons[node.name]
            if node.name in output.unmapped:  # the compiler's output says nothing we can tie to it
                node.actual, node.runs_on, node.became, node.unmapped = None, None, None, True
        result.ops = output.rows
        predicted_adapters = predicted_result.rank_adapters if predicted_result else None
        added = sum(1 for r in output.rows if not r.io and not r.sources)
        renamed = [(graph_names[name], op_type) for name, op_type in originals if name in graph_names]
        actual_adapters = io_adapter_ops(output) if output.io_adapters is not None \
            else edge_ops(originals + renamed, output)
        adapters = compare_adapters(predicted_adapters, actual_adapters)
        result.summary = agreement(result.nodes, result.segments, counts, added, adapters)
        if len(attempts) > 1:  # built, but only with a rule disabled: the default build failed
            result.findings.append({"rule": "compiler-failed", "severity": "warning",
                                    "message": f"built only with {_options_text(last.options)}; "
                                               f"the default build {attempts[0].status}: {attempts[0].error}"})
    else:
        result.nodes = [ProbeNode(name=n, op_type=t, predicted=predicted.get(n), actual=None) for n, t in originals]
        if predicted_result:
            result.summary = agreement(result.nodes, [], counts, 0, None, failed=True)
        result.findings.append({"rule": "compiler-failed", "severity": "error", "message": _failure_message(result)})
    if quantization is not None or output.accuracy is not None:
        result.quantization = _quantization(quantization or {}, output, originals, predicted_result, last.status)
    result.memory = _memory(result, output, predicted_result)
    result.estimates = output.estimates if last.status == OK else None
    if output.core is not None:
        result.compiler["core"] = output.core
    for key in ("build_s", "accuracy_s"):  # accuracy_s: a quantized build's accuracy analysis
        if isinstance(run.response.get(key), (int, float)):
            result.timings[key] = round(run.response[key], 3)
    return result


def _quantization(request: dict[str, Any], output: CompilerOutput, originals: list[tuple[str, str]],
                  predicted_result: GateResult | None, status: str) -> dict[str, Any]:
    """The quantized build's request with the compiler's per-layer accuracy, each layer tied to
    the ONNX nodes it comes from (``mapping.accuracy_layers``)."""
    accuracy = None
    if output.accuracy is not None and status == OK:
        layers = accuracy_layers(output.accuracy["layers"], [name for name, _ in originals], output,
                                 _node_tensors(predicted_result))
        accuracy = {**output.accuracy, "layers": layers}
    return {"mode": request.get("mode"), "calibration": request.get("calibration"),
            "holdout": request.get("holdout"), "accuracy": accuracy}


def _node_tensors(predicted_result: GateResult | None) -> dict[str, tuple[list[str], list[str]]] | None:
    """Per predicted node its (input, output) tensor names; None without a prediction."""
    if not predicted_result:
        return None
    return {n.name: ([i["name"] for i in n.inputs if i["name"]], [o["name"] for o in n.outputs if o["name"]])
            for n in predicted_result.nodes}


def _memory(result: ProbeResult, output: CompilerOutput, predicted_result: GateResult | None) -> dict[str, Any]:
    """The compiler's memory totals (a build that printed them) beside the static estimate of
    the prediction's NPU partitions."""
    compiler = None
    if result.built and output.memory:
        compiler = {"internal_bytes": output.memory.get("internal_bytes"),
                    "weight_bytes": output.memory.get("weight_bytes"), "evidence": result.evidence}
    estimate = None
    s = predicted_result.summary if predicted_result else {}
    if "memory" in s:
        estimate = {"peak_activation_bytes": s.get("peak_activation_bytes"), "weight_bytes": s.get("weight_bytes"),
                    "npu_partitions": s.get("npu_partitions"), "runtime_dtype": s["memory"]["runtime_dtype"],
                    "evidence": s["memory"]["estimate"], "unknown": s["memory"]["unknown"]}
    return {"compiler": compiler, "estimate": estimate}


def compiler_graph_names(compiler: Compiler, predicted_result: GateResult | None) -> dict[str, str]:
    """Original nodes the compiler names differently (an unnamed node), unless that name is taken."""
    if not predicted_result:
        return {}
    taken = {n.name for n in predicted_result.nodes}
    out = {}
    for n in predicted_result.nodes:
        theirs = compiler.graph_name(n.name, n.original_name, [o["name"] for o in n.outputs])
        if theirs != n.name and theirs not in taken:
            out[n.name] = theirs
    return out


def _predicted_partitions(predicted_result: GateResult | None) -> dict[str, int | None]:
    """npu/cpu partitions of the model's nodes, and with the predicted rank adapters when the profile has a rule."""
    if not predicted_result:
        return {}
    counts: dict[str, int | None] = {"npu": predicted_result.summary.get("npu_partitions"),
                                     "cpu": predicted_result.summary.get("cpu_partitions")}
    with_adapters = partitions_with_adapters(predicted_result)
    if with_adapters is not None:
        counts.update(npu_with_adapters=with_adapters[NPU], cpu_with_adapters=with_adapters[CPU])
    return counts


def _write_json(path: Path, doc: dict[str, Any]) -> None:
    path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")


def _predicted_with(result: GateResult | None) -> dict[str, Any]:
    if result is None:
        return {"profile": None}
    s = result.summary
    return {"profile": result.profile.get("name"), "evidence": result.profile.get("evidence"),
            "npu_nodes": s.get("npu_nodes"), "cpu_nodes": s.get("cpu_nodes"), "folded_nodes": s.get("folded_nodes"),
            "npu_partitions": s.get("npu_partitions"), "cpu_partitions": s.get("cpu_partitions")}


def _failure_message(result: ProbeResult) -> str:
    text = f"{result.compiler['name']} {result.compiler.get('version') or ''} ({result.compiler['target']}) " \
           f"{result.status}: {result.error}"
    if len(result.attempts) > 1:
        first = result.attempts[0]
        text += f"; first attempt {first.status}: {first.error}"
    return " ".join(text.split())


def _options_text(options: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in sorted(options.items())) or "default options"


def _joined_logs(runs: list[tuple[ChildRun, CompilerOutput, Attempt]]) -> list[str]:
    """One run's log as is; with a retry, every attempt's log under a header line."""
    if len(runs) == 1:
        return runs[0][0].log
    lines: list[str] = []
    for i, (run, _, attempt) in enumerate(runs, 1):
        lines.append(f"=== npu-gate probe: attempt {i} ({_options_text(attempt.options)}): {attempt.status} ===")
        lines.extend(run.log)
    return lines

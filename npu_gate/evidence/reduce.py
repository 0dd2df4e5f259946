"""``npu-gate reduce``: shrink a model while an external command keeps failing.

The candidate models are sub-graphs of the original: a set of nodes, the tensors they
read but do not produce cut into graph inputs (typed from shape inference), the
initializers they read kept. The search works on the nodes in topological order:

1. bisect: keep the first or the second half (a prefix, or a suffix whose inputs are
   cut) while it still fails;
2. remove chunks (delta debugging): drop 1/n of the nodes at a time, n doubling up to
   one node, so the result is 1-minimal: removing any single node makes it pass.

The search moves units, not bare nodes: a node that folds to a constant (a ``Constant``, a
``Shape`` of a static tensor, a node reading only constants; the gate's folding rule)
stays with the nodes that read it. Otherwise dropping a ``Constant`` would cut its output
into a graph input filled with random values, and a Clip with constant bounds would turn
into a Clip with runtime bounds: another model for the compiler. A constant that no
computing node reads is a unit of its own.

"Failing" is a non-zero exit within the timeout (and, with ``--match``, the text in its
output). A timeout counts as not failing, so a hang never gets promoted. The command
runs without a shell: ``shlex.split`` of the template, then ``{model}`` (and
``{inputs}``) replaced inside each argument.

Samples for ``{inputs}``: one ``.npz`` per step holding exactly that candidate's graph
inputs, sample k in row k of every array (the bundle's inputs.npz layout). With
``--inputs FILE`` the original inputs come from the file by name and every cut tensor
is computed by running the original model on those same samples with onnxruntime, so
sample k of a cut tensor is what the node really sees for sample k. Without it, values
are drawn from a generator seeded by (seed, sample, tensor name): a tensor gets the
same values in every step.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shlex
import signal
import subprocess
import tempfile
import time
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import ModelProto

from npu_gate.contract.samples_file import open_npz, read_arrays
from npu_gate.contract.spec import MAX_SAMPLE_BYTES
from npu_gate.errors import GateError, one_line
from npu_gate.evidence.bundle import write_npz
from npu_gate.files import write_atomic
from npu_gate.graph import facts as graph_facts
from npu_gate.graph.edit import submodel
from npu_gate.graph.fold import fold
from npu_gate.graph.model_file import load_onnx


@dataclass
class Step:
    step: int
    phase: str  # original | bisect | remove
    nodes: int
    failing: bool
    exit_code: int | None  # None: timed out
    seconds: float
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class Outcome:
    nodes: list[str]  # names (or op types) of the nodes kept
    model: ModelProto
    steps: list[Step] = field(default_factory=list)
    sample_source: str = ""


class Reducer:
    def __init__(
        self,
        model_path: Path,
        check: str,
        *,
        timeout: float = 120.0,
        match: str | None = None,
        inputs: Path | None = None,
        samples: int = 1,
        seed: int = 0,
        max_steps: int = 1000,
        progress: Callable[[Step], None] | None = None,
    ) -> None:
        model, _ = load_onnx(model_path)
        self.model, _, _ = graph_facts.infer_shapes(model)  # types for the tensors that get cut
        facts = graph_facts.collect(self.model, [], None)
        self.order = graph_facts.topological_order(
            facts.nodes, graph_facts.node_dependencies(facts.nodes)
        )
        self.units = _units(facts, self.order)
        self.names = [n.name for n in facts.nodes]
        self.template = shlex.split(check)
        if not any("{model}" in t for t in self.template):
            raise GateError("--check: the command must contain {model}")
        self.wants_inputs = any("{inputs}" in t for t in self.template)
        self.timeout, self.match, self.max_steps = timeout, match, max_steps
        self.progress = progress
        self.samples, self.seed = samples, seed
        self.given: dict[str, np.ndarray] = {}
        self.computed: dict[str, np.ndarray] = {}  # cut tensors, from running the original
        self.sample_source = "none ({inputs} not in the command)"
        if self.wants_inputs:
            self.sample_source = f"generated (seed {seed}, {samples} per tensor)"
            if inputs is not None:
                self.given = _read_npz(inputs)
                counts = {len(v) for v in self.given.values()}
                if len(counts) > 1:
                    raise GateError(
                        f"{inputs}: arrays hold different numbers of samples: {sorted(counts)}"
                    )
                self.samples = counts.pop() if counts else samples
                init_names = {t.name for t in self.model.graph.initializer}
                absent = [
                    v.name
                    for v in self.model.graph.input
                    if v.name not in init_names and v.name not in self.given
                ]
                if absent:
                    raise GateError(f"{inputs}: no samples for model input(s) {', '.join(absent)}")
                self.sample_source = f"{inputs.name}; cut tensors computed with onnxruntime"
        self.cache: dict[tuple[int, ...], bool] = {}
        self.steps: list[Step] = []

    # ---------------------------------------------------------------- the search

    def run(self) -> Outcome:
        with tempfile.TemporaryDirectory(prefix="npu-gate-reduce-") as work:
            self.work = Path(work)
            if not self.test(self.nodes_of(range(len(self.units))), "original"):
                last = self.steps[-1]
                why = "timed out" if last.exit_code is None else f"exited {last.exit_code}"
                if last.exit_code not in (None, 0):
                    why += " without printing the --match text"
                raise GateError(
                    f"--check does not fail on the original model ({why}); nothing to reduce"
                )
            current = list(range(len(self.units)))  # unit indices, in topological order
            while len(current) > 1:  # bisect: a prefix or a suffix that still fails
                half = len(current) // 2
                if self.test(self.nodes_of(current[:half]), "bisect"):
                    current = current[:half]
                elif self.test(self.nodes_of(current[half:]), "bisect"):
                    current = current[half:]
                else:
                    break
            chunks = 2
            while len(current) > 1:  # remove chunks, down to single units
                size = -(-len(current) // chunks)
                for start in range(0, len(current), size):
                    rest = current[:start] + current[start + size :]
                    if rest and self.test(self.nodes_of(rest), "remove"):
                        current = rest
                        chunks = max(chunks - 1, 2)
                        break
                else:
                    if chunks >= len(current):
                        break
                    chunks = min(len(current), chunks * 2)
            best = self.nodes_of(current)
        return Outcome(
            [self.names[i] for i in best],
            self.candidate(best),
            self.steps,
            self.sample_source,
        )

    def nodes_of(self, units: Iterable[int]) -> tuple[int, ...]:
        """The node indices of some units, sorted."""
        return tuple(sorted({i for u in units for i in self.units[u]}))

    def candidate(self, nodes: tuple[int, ...]) -> ModelProto:
        return submodel(self.model, nodes, name="reduced")

    def test(self, nodes: tuple[int, ...], phase: str) -> bool:
        key = tuple(sorted(nodes))
        if key in self.cache:
            return self.cache[key]
        if len(self.steps) >= self.max_steps:
            return False  # out of budget: keep what we have
        k = len(self.steps)
        model = self.candidate(key)
        path = self.work / f"step-{k:04d}.onnx"
        path.write_bytes(model.SerializeToString())
        args = [t.replace("{model}", str(path)) for t in self.template]
        note = ""
        if self.wants_inputs:
            npz = self.work / f"step-{k:04d}.npz"
            note = self.write_inputs(model, npz)
            args = [t.replace("{inputs}", str(npz)) for t in args]
        start = time.perf_counter()
        try:
            code, output = run_check(args, self.timeout)
        except OSError as exc:
            raise GateError(f"--check: cannot run {self.template[0]!r}: {exc.strerror}") from None
        failing = code not in (None, 0) and (self.match is None or self.match in output)
        step = Step(k, phase, len(key), failing, code, round(time.perf_counter() - start, 3), note)
        self.steps.append(step)
        if self.progress:
            self.progress(step)
        for suffix in (".onnx", ".npz"):
            path.with_suffix(suffix).unlink(missing_ok=True)
        self.cache[key] = failing
        return failing

    # ---------------------------------------------------------------- samples

    def write_inputs(self, model: ModelProto, path: Path) -> str:
        arrays: dict[str, np.ndarray] = {}
        missing = [v for v in model.graph.input if v.name not in self.given]
        note = ""
        if self.given and missing:
            note = self.compute_cut([v.name for v in missing])
        for value in model.graph.input:
            name = value.name
            if name in self.given:
                arrays[name] = self.given[name]
            elif name in self.computed:
                arrays[name] = self.computed[name]
            else:
                arrays[name] = _generated(value, self.samples, self.seed)
        write_npz(path, arrays)
        return note

    def compute_cut(self, names: list[str]) -> str:
        """Run the original model once more, exposing the cut tensors not yet known."""
        wanted = [n for n in names if n not in self.computed]
        if not wanted:
            return ""
        try:
            import onnxruntime as ort

            from npu_gate.model.numerics import run_limited, session_options

            probe = ModelProto()
            probe.CopyFrom(self.model)
            types = {v.name: v for v in (*self.model.graph.value_info, *self.model.graph.output)}
            del probe.graph.output[:]
            probe.graph.output.extend(types.get(n) or onnx.ValueInfoProto(name=n) for n in wanted)
            options = session_options()
            session = ort.InferenceSession(
                probe.SerializeToString(), options, providers=["CPUExecutionProvider"]
            )
            feeds = [i.name for i in session.get_inputs()]
            rows: list[list[np.ndarray]] = [[] for _ in wanted]
            for k in range(self.samples):
                values = run_limited(session, wanted, {n: self.given[n][k] for n in feeds})
                for row, value in zip(rows, values, strict=True):
                    row.append(np.asarray(value))
            for name, row in zip(wanted, rows, strict=True):
                self.computed[name] = np.stack(row)
        except Exception as exc:
            return f"cut tensors generated: onnxruntime failed on the original ({one_line(exc)})"
        return ""


def _units(facts: graph_facts.GraphFacts, order: list[int]) -> list[tuple[int, ...]]:
    """The nodes grouped as the search moves them, in topological order of their head: each
    computing node with the folded nodes it reads from (transitively), then each folded node
    that no computing node reads, with its own folded feeders."""
    folded, _ = fold(facts, order, facts.initializers)
    made_by = {o: n.index for n in facts.nodes for o in n.outputs if o}

    def with_feeders(index: int) -> set[int]:
        node = facts.nodes[index]
        producers = {made_by.get(name) for name in (*node.inputs, *node.implicit_inputs) if name}
        return {index}.union(*(feeders[p] for p in producers if p in folded))

    feeders: dict[int, set[int]] = {}  # folded node -> itself and the folded nodes it reads, transitively
    for i in order:  # topological: a node's producers come first
        if i in folded:
            feeders[i] = with_feeders(i)
    heads = {i: with_feeders(i) for i in order if i not in folded}
    covered = set().union(*heads.values())
    for i in reversed(order):  # a constant's readers come after it: the last one covers its feeders
        if i in folded and i not in covered:
            heads[i] = feeders[i]
            covered |= feeders[i]
    position = {i: k for k, i in enumerate(order)}
    return [tuple(sorted(heads[h])) for h in sorted(heads, key=position.__getitem__)]


def run_check(args: list[str], timeout: float) -> tuple[int | None, str]:
    """Run one step's command: (its exit code, None when it ran past ``timeout``; its output).
    The command leads a process group of its own, killed whole when the command ends or times
    out: a child it started (a compiler behind a wrapper script, something left in the
    background) is never left running. Its output goes to files, not pipes, so a child that
    holds them open cannot keep the step waiting once the command itself has ended."""
    groups = hasattr(os, "killpg") and hasattr(os, "waitid")  # POSIX; elsewhere the command alone
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=groups)
        try:
            ended = _ended(proc, timeout) if groups else _waited(proc, timeout)
        finally:
            if groups:  # while the command is unreaped its pid, the group's id, is not reused
                with contextlib.suppress(OSError):  # the group is gone already
                    os.killpg(proc.pid, signal.SIGKILL)
            if proc.poll() is None:
                proc.kill()
            proc.wait()
        if not ended:
            return None, ""
        out.seek(0)
        err.seek(0)
        return proc.returncode, out.read().decode("utf-8", "replace") + err.read().decode("utf-8", "replace")


def _ended(proc: subprocess.Popen[bytes], timeout: float) -> bool:
    """Whether the command ended within ``timeout`` seconds, leaving it unreaped (a zombie)."""
    deadline = time.monotonic() + timeout
    while os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        time.sleep(min(0.02, left))
    return True


def _waited(proc: subprocess.Popen[bytes], timeout: float) -> bool:
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        return False
    return True


def _read_npz(path: Path) -> dict[str, np.ndarray]:
    """Every array of the --inputs file, read as a samples file is (``samples_file``): a regular
    file, each member's .npy header and declared size checked before any is decompressed, at
    most MAX_SAMPLES_BYTES together."""
    where = f"{path}: --inputs"
    with open_npz(path, where) as zf:
        return read_arrays(zf, where)


def _generated(value: onnx.ValueInfoProto, samples: int, seed: int) -> np.ndarray:
    """Seeded values for one graph input: the same tensor name gives the same values."""
    info = graph_facts.tensor_info_from_type(value.name, value.type)
    shape = [d if isinstance(d, int) and d >= 0 else 1 for d in (info.shape or [])]
    try:
        dtype = np.dtype(info.dtype) if info.dtype and info.dtype not in ("string", "bfloat16") else None
    except TypeError:  # float8, float4...: numpy has no such type; float32 values like string/bfloat16
        dtype = None
    size = math.prod(shape) * (dtype or np.dtype(np.float32)).itemsize
    if size > MAX_SAMPLE_BYTES:
        raise GateError(f"--check {{inputs}}: tensor {value.name!r}: one sample of shape {shape} is {size:,} bytes, "
                        f"more than the {MAX_SAMPLE_BYTES:,} generated per tensor; pass --inputs")
    rows = []
    for k in range(samples):
        rng = np.random.default_rng([seed, k, zlib.crc32(value.name.encode("utf-8"))])
        if dtype is None or dtype.kind == "f":
            rows.append(rng.uniform(0.0, 1.0, size=shape).astype(dtype or np.float32))
        elif dtype.kind == "b":
            rows.append(rng.random(shape) < 0.5)
        else:  # integers: small non-negative values, valid as indices and shapes more often
            rows.append(rng.integers(0, 2, size=shape).astype(dtype))
    return np.stack(rows)


def write_log(
    path: Path, model: Path, check: str, reducer: Reducer, outcome: Outcome, out: Path
) -> None:
    doc = {
        "model": model.name,
        "check": check,
        "timeout_s": reducer.timeout,
        "match": reducer.match,
        "samples": outcome.sample_source,
        "original_nodes": len(reducer.order),
        "reduced_nodes": len(outcome.nodes),
        "reduced": out.name,
        "kept": outcome.nodes,
        "steps": [s.to_dict() for s in outcome.steps],
    }
    write_atomic(path, (json.dumps(doc, indent=2) + "\n").encode("utf-8"))

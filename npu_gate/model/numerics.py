"""ONNX Runtime (CPU) against the eager PyTorch module, on seeded samples.

Imports torch and onnxruntime lazily: this module only runs for torch contracts.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, cast

import numpy as np

from npu_gate.contract.spec import Contract
from npu_gate.errors import one_line
from npu_gate.model.capture import capture_output
from npu_gate.model.samples import make_samples
from npu_gate.result.types import NumericsEntry


@dataclass
class OutputComparison:
    output: str
    max_abs_err: float | None
    max_rel_err: float | None
    atol: float
    rtol: float
    passed: bool
    samples: int
    problem: str | None = None  # shape/dtype mismatch, non-finite values
    # [min, max] of the reference's finite values (None: not compared)
    reference_range: tuple[float, float] | None = None
    # why the comparison cannot tell much: "below-atol" (every reference value within atol of 0:
    # judged by the error relative to the output's scale instead), "zero", "constant"; None: it can
    uninformative: str | None = None
    scale_rel_err: float | None = None  # max abs error / max |reference| (set when "below-atol")

    def to_dict(self) -> NumericsEntry:
        # measured_fields holds the NumericsEntry keys a ToleranceCheck has (typed loosely: verify.Check shares it)
        out = cast(NumericsEntry, {"output": self.output, **measured_fields(self)})
        if self.reference_range is not None:
            out["reference_range"] = list(self.reference_range)
        if self.uninformative is not None:
            out["uninformative"] = self.uninformative
        if self.scale_rel_err is not None:
            out["scale_rel_err"] = self.scale_rel_err
        return out


class ToleranceCheck(Protocol):
    """Outputs compared against a tolerance: an OutputComparison, a rewrite's verify.Check."""

    max_abs_err: float | None
    max_rel_err: float | None
    atol: float
    rtol: float
    passed: bool
    samples: int
    problem: str | None


def measured_fields(c: ToleranceCheck) -> dict[str, Any]:
    """The JSON of what ``c`` measured: errors, tolerance, verdict, samples, then its problem if any."""
    out: dict[str, Any] = {"max_abs_err": c.max_abs_err, "max_rel_err": c.max_rel_err, "atol": c.atol,
                           "rtol": c.rtol, "passed": c.passed, "samples": c.samples}
    if c.problem:
        out["problem"] = c.problem
    return out


@dataclass
class NumericsOutcome:
    comparisons: list[OutputComparison]
    error: str | None
    seconds: float
    log: list[str]
    samples: list[dict[str, np.ndarray]] = field(default_factory=list)  # the inputs compared


class ReferenceFailed(Exception):
    """The eager reference could not be computed: its message in one line, and what it printed."""

    def __init__(self, message: str, log: list[str] | None = None) -> None:
        super().__init__(message)
        self.log = list(log or [])


# The eager PyTorch outputs of samples (flattened, per sample) and what computing them printed;
# raises ReferenceFailed. The module runs in the child process of ``model.worker``.
Reference = Callable[[list[dict[str, np.ndarray]]], tuple[list[list[np.ndarray]], list[str]]]


def compare(contract: Contract, reference: Reference, onnx_path: Path) -> NumericsOutcome:
    start = time.perf_counter()
    spec = contract.numerics
    samples = make_samples(contract.inputs, spec.samples, spec.seed)
    with capture_output() as captured:
        try:
            ort_outputs, names = _run_onnxruntime(onnx_path, samples)
        except Exception as exc:
            return NumericsOutcome([], f"onnxruntime: {one_line(exc)}",
                                   time.perf_counter() - start, captured.lines, samples)
    log = captured.lines
    try:
        torch_outputs, printed = reference(samples)
    except ReferenceFailed as exc:
        return NumericsOutcome([], f"PyTorch module: {exc}", time.perf_counter() - start, log + exc.log, samples)
    log = log + printed
    comparisons = []
    for index in range(len(names)):
        pairs = []
        for k in range(len(samples)):
            ref = torch_outputs[k][index] if index < len(torch_outputs[k]) else None
            pairs.append((ort_outputs[k][index], ref))
        comparisons.append(compare_output(output_label(names, index), pairs, spec.atol, spec.rtol))
    return NumericsOutcome(comparisons, None, time.perf_counter() - start, log, samples)


def output_label(names: list[str], index: int) -> str:
    """The name a comparison row goes by: a graph may list one tensor as several outputs (a
    torchscript export of ``return y, y``), and those rows need telling apart."""
    name = names[index]
    return f"{name} (output {index + 1})" if names.count(name) > 1 else name


def _run_onnxruntime(path: Path, samples: list[dict[str, np.ndarray]]) -> tuple[list[list[np.ndarray]], list[str]]:
    import onnxruntime as ort

    options = session_options()
    options.intra_op_num_threads = 1  # deterministic and fair on a 2-core CI runner
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    names, results = run_session(session, samples, "are not declared in the contract")
    return results, names


def session_options() -> Any:
    """onnxruntime session options with its own log off: the log quotes node names from the
    model unescaped (terminal escape sequences included) straight to stderr. Every failure
    still raises, and the caller reports it escaped."""
    import onnxruntime as ort

    # Older onnxruntime (1.23) logs some run errors (an allocation overflow) through the
    # process-wide default logger, which the session's level does not reach.
    ort.set_default_logger_severity(4)
    options = ort.SessionOptions()
    options.log_severity_level = 4  # fatal only
    return options


RUN_SECONDS = 30.0  # one onnxruntime run is stopped after this long (a Loop that never ends)


@contextlib.contextmanager
def time_limit() -> Iterator[Any]:
    """RunOptions for one onnxruntime run, stopped with an error after ``RUN_SECONDS``: a model's
    Loop trip count (2**62, a condition that stays true) must not hang the gate."""
    import onnxruntime as ort

    options = ort.RunOptions()
    options.log_severity_level = 4  # fatal only, as in session_options
    timer = threading.Timer(RUN_SECONDS, lambda: setattr(options, "terminate", True))
    timer.daemon = True
    timer.start()
    try:
        yield options
    except Exception:
        if options.terminate:
            raise TimeoutError(f"run stopped after {RUN_SECONDS:g} s") from None
        raise
    finally:
        timer.cancel()


def run_limited(session: Any, names: list[str] | None, feed: dict[str, np.ndarray]) -> list[Any]:
    """``session.run`` under ``time_limit``."""
    with time_limit() as options:
        return list(session.run(names, feed, options))


def run_session(
    session: Any, samples: list[dict[str, np.ndarray]], missing: str
) -> tuple[list[str], list[list[np.ndarray]]]:
    """Run an onnxruntime session on each sample: (output names, outputs per sample).

    ``missing`` completes the error when a model input has no value in a sample."""
    wanted = [i.name for i in session.get_inputs()]
    names = [o.name for o in session.get_outputs()]
    results = []
    for sample in samples:
        absent = [n for n in wanted if n not in sample]
        if absent:
            raise ValueError(f"model input(s) {absent} {missing}")
        results.append([np.asarray(v) for v in run_limited(session, names, {n: sample[n] for n in wanted})])
    return names, results


def run_torch(module: Any, contract: Contract, samples: list[dict[str, np.ndarray]]) -> list[list[np.ndarray]]:
    """The eager module's outputs, flattened per sample (in the child process of ``model.worker``)."""
    import torch

    results = []
    with torch.no_grad():
        for sample in samples:
            args = [torch.from_numpy(sample[i.name]) for i in contract.inputs]
            results.append([t.detach().cpu().numpy() for t in _flatten(module(*args))])
    return results


def _flatten(value: Any) -> list[Any]:
    import torch

    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, list | tuple):
        return [t for v in value for t in _flatten(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _flatten(v)]
    return []


def compare_output(
    name: str, pairs: Sequence[tuple[np.ndarray, np.ndarray | None]], atol: float, rtol: float,
    reference: str = "PyTorch",
) -> OutputComparison:
    """Compare ``got`` with the reference ``ref`` on each sample: an element passes when
    |got - ref| <= atol + rtol * |ref|. NaN never passes; infinities pass only where both
    sides hold the same one, and a passing comparison then says how many there were.
    ``reference`` names the reference side in messages: rewrites and replacements compare
    with the original ONNX model, not with PyTorch."""
    count = len(pairs)
    arrays = []
    diffs: list[np.ndarray | None] = []  # exact |got - ref| of integer outputs
    for got, ref in pairs:
        if ref is None:
            return OutputComparison(name, None, None, atol, rtol, False, count,
                                    "PyTorch returned fewer outputs than the ONNX model")
        if got.shape != ref.shape:
            return OutputComparison(name, None, None, atol, rtol, False, count,
                                    f"shape {list(got.shape)} vs {reference} {list(ref.shape)}")
        arrays.append((got.astype(np.float64), ref.astype(np.float64)))
        diffs.append(_integer_diff(got, ref) if _integers(got, ref) else None)
    problem = _non_finite_problem(arrays)
    if problem:
        return OutputComparison(name, None, None, atol, rtol, False, count, problem)
    max_abs = 0.0
    max_rel = 0.0
    passed = True
    for (a, b), exact in zip(arrays, diffs, strict=True):
        mask = np.isfinite(b)  # the infinities are equal on both sides (checked above)
        diff = exact if exact is not None else np.abs(a[mask] - b[mask])
        if diff.size:
            max_abs = max(max_abs, float(diff.max()))
            # relative error where the reference is non-zero; zeros are covered by abs error
            nonzero = np.abs(b[mask]) > 0
            if nonzero.any():
                rel = diff[nonzero] / np.abs(b[mask][nonzero])
                max_rel = max(max_rel, float(rel.max()))
            passed = passed and bool(np.all(diff <= atol + rtol * np.abs(b[mask])))
    infinite = sum(int(np.count_nonzero(np.isinf(b))) for _, b in arrays)
    note = f"{infinite} infinite values, the same on both sides" if infinite else None
    finite = [b[np.isfinite(b)] for _, b in arrays]
    values = np.concatenate(finite) if finite else np.zeros(0)
    if not values.size:
        return OutputComparison(name, max_abs, max_rel, atol, rtol, passed, count, note)
    low, high = float(values.min()), float(values.max())
    scale = max(abs(low), abs(high))
    uninformative, scaled = None, None
    if scale == 0:
        uninformative = "zero"
    elif low == high and values.size > 1:
        uninformative = "constant"
    elif scale <= atol:  # atol alone cannot fail: judge the error against the output's own scale
        uninformative, scaled = "below-atol", max_abs / scale
        passed = passed and scaled <= rtol
    return OutputComparison(name, max_abs, max_rel, atol, rtol, passed, count, note, (low, high), uninformative,
                            scaled)


def _integers(got: np.ndarray, ref: np.ndarray) -> bool:
    return bool(np.issubdtype(got.dtype, np.integer) and np.issubdtype(ref.dtype, np.integer))


def _integer_diff(got: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """|got - ref| of integer outputs, flat, without float64 rounding: int64 values past 2**53
    (ids, hashes, offsets) that differ by 1 would round to equal. Differing elements are
    subtracted as Python ints; each is at least 1 once stored as float64."""
    diff = np.zeros(got.size, dtype=np.float64)
    unequal = (got != ref).ravel()
    if unequal.any():
        exact = [abs(int(x) - int(y)) for x, y in zip(got.ravel()[unequal], ref.ravel()[unequal], strict=True)]
        diff[unequal] = exact
    return diff


def _non_finite_problem(arrays: list[tuple[np.ndarray, np.ndarray]]) -> str | None:
    """Why non-finite values fail the comparison: NaN on either side, or infinities that
    differ (the samples named from 0); None when there is no such value."""
    nan = [k for k, (a, b) in enumerate(arrays) if np.isnan(a).any() or np.isnan(b).any()]
    if nan:
        got = sum(int(np.count_nonzero(np.isnan(arrays[k][0]))) for k in nan)
        ref = sum(int(np.count_nonzero(np.isnan(arrays[k][1]))) for k in nan)
        size = sum(arrays[k][0].size for k in nan)
        return (f"NaN on sample(s) {', '.join(map(str, nan))}: {got} of {size} values, "
                f"{ref} in the reference; NaN never counts as a match")
    differ = [k for k, (a, b) in enumerate(arrays)
              if not np.array_equal(a[np.isinf(a) | np.isinf(b)], b[np.isinf(a) | np.isinf(b)])]
    if differ:
        return f"infinite values differ from the reference on sample(s) {', '.join(map(str, differ))}"
    return None

"""The input contract (npu-gate.json): load, validate, resolve paths and the profile.

Everything is checked before any model is loaded: schema (every error with its JSON
path), then what a schema cannot say (duplicate inputs, range order, known rule ids in
waivers, the profile, the files it names: the samples file's arrays against the inputs, a
replacement model's inputs, the device timings, and that the modules of ``metric.callable``
and ``replacement.torch.factory`` exist). Relative paths resolve against the contract's own
folder. The user's modules are not imported here (importing runs their code): the rewrite
stage imports them, before any model work of that contract, as the export imports
``model.torch.factory``.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from npu_gate.contract.code_refs import refused, refused_problem
from npu_gate.contract.parts import Gates as Gates  # re-exported (`x as x`): parts of a Contract callers name
from npu_gate.contract.parts import InputSpec as InputSpec
from npu_gate.contract.parts import Waiver
from npu_gate.errors import ContractError, ProfileError
from npu_gate.escape import WORD_JOINER, shorten
from npu_gate.graph.source import inside, repository_of, usable_path
from npu_gate.profile.compilers import COMPILERS, KNOWN
from npu_gate.profile.spec import Profile, load_profile
from npu_gate.rules import RULES
from npu_gate.validation import read_valid_document

if TYPE_CHECKING:
    import numpy as np

CONTRACT_NAMES = ("npu-gate.json", "npu-gate.yaml", "npu-gate.yml")
# Rules no waiver may match, and why: the waivers' own findings are reported after the waivers
# are applied; a run that did not finish must never pass.
UNWAIVABLE = {"waiver-expired": "findings are about the waivers themselves",
              "waiver-unused": "findings are about the waivers themselves",
              "gate-timeout": "findings say the run did not finish (raise --timeout instead)"}
FLOAT_DTYPES = ("float32", "float16")
# The values each input dtype holds (numpy's iinfo/finfo, without importing numpy here).
DTYPE_BOUNDS: dict[str, tuple[float, float]] = {
    "float32": (-3.4028234663852886e38, 3.4028234663852886e38), "float16": (-65504.0, 65504.0),
    "int8": (-2**7, 2**7 - 1), "uint8": (0, 2**8 - 1), "int32": (-2**31, 2**31 - 1), "int64": (-2**63, 2**63 - 1),
    "bool": (0, 1),
}
DTYPE_BYTES = {"float32": 4, "float16": 2, "int8": 1, "uint8": 1, "int32": 4, "int64": 8, "bool": 1}
MAX_SAMPLE_BYTES = 2**31  # one seeded sample of one input: drawn in memory with numpy


@dataclass(frozen=True)
class TorchModel:
    factory: str
    kwargs: dict[str, Any]
    exporter: str  # dynamo | torchscript
    opset: int
    compare_exporters: bool = False  # also export with the other exporter and diff the graphs
    path: tuple[str, ...] = ()  # more folders to import the contract's code from, relative to it


@dataclass(frozen=True)
class Numerics:
    atol: float = 1e-4
    rtol: float = 1e-3
    samples: int = 4
    seed: int = 0
    samples_file: Path | None = None  # .npz of real inputs, sample k in row k (rewrite verification)


@dataclass(frozen=True)
class QuantSamples:
    """``quantization.calibration`` / ``quantization.holdout``: a samples file or synthetic rows."""

    samples_file: Path | None = None  # None: drawn from each input's range (synthetic)
    count: int | None = None  # None: every row the file gives this use, or the default count


# Default sample counts without a file; the file's own rows otherwise (docs/quantization.md).
CALIBRATION_COUNT = 32
HOLDOUT_COUNT = 8
QUANT_DTYPES = {"int8": ("uint8", "int8"), "int16": ("uint16", "int16")}  # mode -> default activations, weights


@dataclass(frozen=True)
class Quantization:
    """``quantization``: quantize the float graph (onnxruntime, static QDQ) and gate its accuracy."""

    mode: str = "int8"  # int8 | int16 | fp16 | none
    activations: str = "uint8"
    weights: str = "int8"
    per_channel: bool = True
    method: str = "minmax"  # minmax | entropy | percentile
    calibration: QuantSamples = field(default_factory=QuantSamples)
    holdout: QuantSamples = field(default_factory=QuantSamples)

    @property
    def quantizes(self) -> bool:
        return self.mode in QUANT_DTYPES


@dataclass(frozen=True)
class RewriteRequest:
    """A catalog rewrite the gate applies before checking (``rewrites`` in the contract)."""

    name: str
    atol: float | None = None  # None: numerics.atol
    rtol: float | None = None


@dataclass(frozen=True)
class Metric:
    """``metric``: a task metric comparing the original and the rewritten model's outputs."""

    callable: str  # module:function, imported with the contract folder on sys.path
    threshold: dict[str, dict[str, float]] = field(default_factory=dict)  # name -> {min?, max?}


@dataclass(frozen=True)
class Replacement:
    """``replacement``: the user's own rewritten model, compared with the original."""

    onnx_path: Path | None
    onnx_ref: str | None
    torch: TorchModel | None


@dataclass(frozen=True)
class ProbeSpec:
    """target.probe: build with a real compiler too (npu-gate probe) and say what decides."""

    compiler: str
    target: str
    venv: Path | None  # None: .venv-COMPILER in the working directory
    decide: str = "prediction"  # prediction | measured
    timeout: float | None = None
    soc_model: int | None = None  # QNN: the Snapdragon SoC the HTP prepares for (None: the plug-in's default)


@dataclass(frozen=True)
class Contract:
    path: Path
    name: str
    onnx_path: Path | None
    onnx_ref: str | None  # the path as written in the contract
    torch: TorchModel | None
    inputs: list[InputSpec]
    profile: Profile
    numerics: Numerics
    gates: Gates
    waivers: list[Waiver] = field(default_factory=list)
    sha256: str = ""
    rewrites: list[RewriteRequest] = field(default_factory=list)
    metric: Metric | None = None
    device_timings: Path | None = None  # measured on the board; see npu_gate/contract/device_timings.py
    replacement: Replacement | None = None
    probe: ProbeSpec | None = None
    # The rows of numerics.samples_file, read and checked by the full load (None: no
    # samples_file, or not loaded in full).
    file_samples: list[dict[str, np.ndarray]] | None = field(default=None, compare=False, repr=False)
    quantization: Quantization | None = None
    # The rows of quantization.calibration/holdout samples files (None: synthetic, or not loaded
    # in full), already split so that hold-out rows are never calibration rows.
    calibration_rows: list[dict[str, np.ndarray]] | None = field(default=None, compare=False, repr=False)
    holdout_rows: list[dict[str, np.ndarray]] | None = field(default=None, compare=False, repr=False)
    # False: loaded for a result-cache lookup (``check_onnx=False``), without what needs onnx
    # or numpy; the gate reloads such a contract in full before it runs.
    complete: bool = True

    @property
    def folder(self) -> Path:
        return self.path.parent

    @property
    def import_folders(self) -> list[Path]:
        """Where the contract's code (factory, metric, torch replacement) is imported from, in
        order: the contract's folder, the repository root (the git work tree above it), then
        ``model.torch.path``. The same from the CLI, the hooks and the Action, whatever the
        working folder."""
        return import_folders(self.folder, self.torch.path if self.torch else ())


def find_contract(arg: str | None) -> Path:
    """A contract path from the CLI: a file, a folder holding npu-gate.json, or the cwd."""
    base = Path(arg) if arg else Path.cwd()
    if not usable_path(str(base)):
        raise ContractError(f"{shorten(arg)}: cannot name a file (a NUL byte, or a name longer than the file "
                            "system allows)")
    if base.is_dir():
        for name in CONTRACT_NAMES:
            if (base / name).is_file():
                return base / name
        raise ContractError(f"{base}: no {' / '.join(CONTRACT_NAMES)} in this folder")
    if not base.exists():
        raise ContractError(f"{arg}: file not found")
    return base


def load_contract(path: Path, *, check_onnx: bool = True) -> Contract:
    """Load and validate a contract. ``check_onnx=False`` (a result-cache lookup) skips what
    needs onnx or numpy: the profile's onnx-based lint (see ``profile.load_profile``), reading
    the samples file and the replacement model; the contract is then not ``complete``."""
    label = str(path)
    doc = read_valid_document(path, "contract", ContractError)
    problems = _semantic_problems(doc, label)
    folder = path.resolve().parent
    repository = repository_of(path)
    bound = repository_problems(doc, folder, repository, label)
    if bound:  # refused before any of them is read
        raise ContractError(*problems, *bound)
    profile: Profile | None = None
    try:
        profile = load_profile(doc["target"]["profile"], folder, where=f"{label}: target.profile",
                               check_onnx=check_onnx, root=repository)
    except ProfileError as exc:
        problems.extend(exc.problems)
    model = doc["model"]
    onnx_path = None
    if "onnx" in model:
        onnx_path = folder / model["onnx"]
        if not onnx_path.is_file():
            problems.append(f"{label}: model.onnx: file {model['onnx']!r} not found")
    files: dict[str, Path] = {}  # the named files that exist
    quant_doc = doc.get("quantization", {})
    for key, ref in (("numerics.samples_file", doc.get("numerics", {}).get("samples_file")),
                     ("device_timings", doc.get("device_timings")),
                     ("quantization.calibration.samples_file", quant_doc.get("calibration", {}).get("samples_file")),
                     ("quantization.holdout.samples_file", quant_doc.get("holdout", {}).get("samples_file"))):
        if ref is None:
            continue
        if (folder / ref).is_file():
            files[key] = folder / ref
        elif (folder / ref).exists():
            problems.append(f"{label}: {key}: {ref!r} is not a regular file")
        else:
            problems.append(f"{label}: {key}: file {ref!r} not found")
    replacement_doc = doc.get("replacement", {})
    if "onnx" in replacement_doc and not (folder / replacement_doc["onnx"]).is_file():
        problems.append(f"{label}: replacement.onnx: file {replacement_doc['onnx']!r} not found")
    problems.extend(_code_problems(doc, folder, label))
    inputs = [_input_spec(i, doc.get("dynamic_dims")) for i in doc["inputs"]]
    file_samples = None
    quantization = _quantization(doc.get("quantization"), folder)
    quant_rows: tuple[list[dict[str, np.ndarray]] | None, list[dict[str, np.ndarray]] | None] = (None, None)
    if check_onnx:
        file_samples, found = _file_problems(doc, folder, label, files, inputs)
        problems.extend(found)
        if quantization is not None and not found:
            try:
                quant_rows = _quant_rows(quantization, files, inputs, label)
            except ContractError as exc:
                problems.extend(exc.problems)
    if problems or profile is None:
        raise ContractError(*problems)

    torch_model = _torch_model(model)
    replacement = None
    if replacement_doc:
        ref = replacement_doc.get("onnx")
        replacement = Replacement(folder / ref if ref else None, ref, _torch_model(replacement_doc))
    numerics = doc.get("numerics", {})
    gates = doc.get("gates", {})
    return Contract(
        path=path,
        name=doc.get("name") or folder.name,
        onnx_path=onnx_path,
        onnx_ref=model.get("onnx"),
        torch=torch_model,
        inputs=inputs,
        profile=profile,
        numerics=Numerics(
            atol=float(numerics.get("atol", Numerics.atol)),
            rtol=float(numerics.get("rtol", Numerics.rtol)),
            samples=int(numerics.get("samples", Numerics.samples)),
            seed=int(numerics.get("seed", Numerics.seed)),
            samples_file=folder / numerics["samples_file"] if "samples_file" in numerics else None,
        ),
        gates=Gates(
            max_cpu_nodes=gates.get("max_cpu_nodes"),
            max_npu_partitions=gates.get("max_npu_partitions"),
            max_boundary_bytes=gates.get("max_boundary_bytes"),
            max_peak_activation_bytes=gates.get("max_peak_activation_bytes"),
            max_weight_bytes=gates.get("max_weight_bytes"),
            allow_dynamic_shapes=bool(gates.get("allow_dynamic_shapes", False)),
            min_output_sqnr_db=gates.get("min_output_sqnr_db"),
            min_output_cosine=gates.get("min_output_cosine"),
            max_sram_bytes=gates.get("max_sram_bytes"),
            max_estimated_ms=gates.get("max_estimated_ms"),
        ),
        waivers=[
            Waiver(
                rule=w["rule"],
                reason=w["reason"],
                node=_as_typed(w.get("node")),
                op_type=_as_typed(w.get("op_type")),
                expires=dt.date.fromisoformat(w["expires"]) if "expires" in w else None,
                module=_as_typed(w.get("module")),
                source=_as_typed(w.get("source")),
            )
            for w in doc.get("waivers", [])
        ],
        sha256=hashlib.sha256(path.read_bytes()).hexdigest(),
        rewrites=[_rewrite_request(r) for r in doc.get("rewrites", [])],
        metric=Metric(doc["metric"]["callable"], dict(doc["metric"].get("threshold", {})))
        if "metric" in doc else None,
        device_timings=folder / doc["device_timings"] if "device_timings" in doc else None,
        replacement=replacement,
        probe=_probe_spec(doc["target"].get("probe"), folder),
        file_samples=file_samples,
        quantization=quantization,
        calibration_rows=quant_rows[0],
        holdout_rows=quant_rows[1],
        complete=check_onnx,
    )


def named_paths(doc: dict[str, Any]) -> list[tuple[str, str]]:
    """(key, path as written) of every file and folder a contract names, but its profile
    (``target.profile``, a built-in name or a path: ``profile.spec.resolve_ref``) and the
    compiler's venv (``target.probe.venv``)."""
    model, replacement, quant = doc.get("model", {}), doc.get("replacement", {}), doc.get("quantization", {})
    named = [("model.onnx", model.get("onnx")), ("replacement.onnx", replacement.get("onnx")),
             ("numerics.samples_file", doc.get("numerics", {}).get("samples_file")),
             ("device_timings", doc.get("device_timings")),
             ("quantization.calibration.samples_file", quant.get("calibration", {}).get("samples_file")),
             ("quantization.holdout.samples_file", quant.get("holdout", {}).get("samples_file"))]
    for key, part in (("model", model), ("replacement", replacement)):
        named += [(f"{key}.torch.path[{i}]", p) for i, p in enumerate(part.get("torch", {}).get("path", []))]
    return [(key, ref) for key, ref in named if isinstance(ref, str)]


def repository_problems(doc: dict[str, Any], folder: Path, repository: Path, label: str) -> list[str]:
    """A line for each path the contract names (``named_paths``) that resolves outside its
    repository (``graph.source.repository_of``: its git work tree; else the working folder holding
    it, else its folder), symlinks followed, or that no file system could hold (a NUL byte, a name
    over the system's limits)."""
    problems = []
    for key, ref in named_paths(doc):
        if not usable_path(ref) or not usable_path(str(folder / ref)):
            problems.append(f"{label}: {key}: {shorten(ref)!r} cannot name a file (a NUL byte, or a name "
                            "longer than the file system allows)")
        elif not inside(folder / ref, repository):
            problems.append(f"{label}: {key}: {shorten(ref)!r} is outside the repository ({repository}): "
                            "a contract reads only files of its repository")
    return problems


def import_folders(folder: Path, extra: Sequence[str] = ()) -> list[Path]:
    """``Contract.import_folders`` for a contract in ``folder`` with ``model.torch.path`` ``extra``."""
    from npu_gate.graph.source import repository_root

    out = [folder.resolve()]
    root = repository_root(folder)
    if root is not None and root not in out:
        out.append(root)
    for entry in extra:
        resolved = (folder / entry).resolve()
        if resolved not in out:
            out.append(resolved)
    return out


def _code_problems(doc: dict[str, Any], folder: Path, label: str) -> list[str]:
    """Code references to a refused module (``contract/code_refs.py``: the standard library,
    process and shell packages); ``metric.callable`` and ``replacement.torch.factory`` whose module
    neither the contract folder nor the installed packages have. Only that is certain without importing the module,
    which runs the user's code; whether it imports and has the callable, the rewrite stage finds
    out by importing it before any model work of this contract."""
    import importlib.util

    torch_doc = doc["model"].get("torch", {})
    extra = [p for p in torch_doc.get("path", []) if isinstance(p, str)]
    problems = [f"{label}: model.torch.path[{i}]: folder {p!r} not found" for i, p in enumerate(extra)
                if not (folder / p).is_dir()]
    folders = import_folders(folder, [p for p in extra if (folder / p).is_dir()])
    refs = []
    if "factory" in torch_doc and importlib.util.find_spec("torch") is not None:
        refs.append(("model.torch.factory", torch_doc["factory"]))
    if "metric" in doc:
        refs.append(("metric.callable", doc["metric"]["callable"]))
    factory = doc.get("replacement", {}).get("torch", {}).get("factory")
    # Without PyTorch a torch replacement cannot run at all, which `check` says as such.
    if factory is not None and importlib.util.find_spec("torch") is not None:
        refs.append(("replacement.torch.factory", factory))
    # Refused with or without PyTorch: a JSON-only change must not run a command (code_refs.py).
    named = [("model.torch.factory", doc["model"].get("torch", {}).get("factory")),
             ("replacement.torch.factory", factory),
             ("metric.callable", doc["metric"]["callable"] if "metric" in doc else None)]
    problems += [p for where, ref in named if isinstance(ref, str)
                 and (p := refused_problem(ref, f"{label}: {where}")) is not None]
    for where, ref in refs:
        module = ref.split(":")[0]
        if refused(module):
            continue  # said above
        top = module.split(".")[0]
        if not _module_exists(top, folders):  # the words import_callable would say
            problems.append(f"{label}: {where}: cannot import {module!r}: No module named {top!r} "
                            f"{searched(folders, folder)}")
    return problems


def searched(folders: Sequence[Path], base: Path) -> str:
    """The folders a module was looked for in, and the fix: for an import error's line."""
    shown = []
    for f in folders:
        try:
            shown.append(os.path.relpath(f, base))
        except ValueError:  # another drive
            shown.append(str(f))
    return (f"(searched the contract folder, the repository root and model.torch.path: {', '.join(shown)}, "
            "then the installed packages; add the folder that holds it to model.torch.path, relative to the "
            "contract)")


def _module_exists(top: str, folders: Sequence[Path]) -> bool:
    """Whether ``import top`` can find a module with ``folders`` first on sys.path (as
    ``model.user_code.import_callable`` imports it), without importing anything."""
    import importlib.machinery
    import importlib.util

    for folder in folders:
        if (folder / top).is_dir() or any((folder / f"{top}{suffix}").is_file()
                                          for suffix in importlib.machinery.all_suffixes()):
            return True
    try:
        return importlib.util.find_spec(top) is not None
    except (ImportError, ValueError):  # a half-imported module in sys.modules: not for us to judge
        return True


def _file_problems(doc: dict[str, Any], folder: Path, label: str, files: dict[str, Path],
                   inputs: list[InputSpec]) -> tuple[list[dict[str, np.ndarray]] | None, list[str]]:
    """The contents of the files the contract names (those that exist), read by the full load
    only (the samples file needs numpy, the replacement model onnx): the samples file's rows and
    their problems, the device timings' problems, a replacement ONNX model whose inputs are not
    exactly the contract's (the samples are fed by name)."""
    from npu_gate.contract import device_timings
    from npu_gate.contract.samples_file import read_samples

    problems: list[str] = []
    rows = None
    if "numerics.samples_file" in files:
        try:
            rows = read_samples(files["numerics.samples_file"], inputs)
        except ContractError as exc:
            problems.extend(exc.problems)
    if "device_timings" in files:
        try:
            device_timings.load(files["device_timings"])
        except ContractError as exc:
            problems.extend(exc.problems)
    ref = doc.get("replacement", {}).get("onnx")
    if ref is not None and (folder / ref).is_file():
        problems.extend(_replacement_problems(folder / ref, ref, inputs, f"{label}: replacement.onnx"))
    return rows, problems


def _replacement_problems(path: Path, ref: str, inputs: list[InputSpec], where: str) -> list[str]:
    from npu_gate.errors import GateError
    from npu_gate.graph.facts import initializer_inputs
    from npu_gate.graph.model_file import load_onnx

    try:
        model, _ = load_onnx(path, f"{where}: {ref}", weights=False)
    except GateError as exc:
        return exc.problems
    wanted = [i.name for i in inputs]
    weights = {t.name for t in model.graph.initializer} - initializer_inputs(model, wanted)
    found = [i.name for i in model.graph.input if i.name not in weights]
    if sorted(found) != sorted(wanted):
        return [f"{where}: {ref} has input(s) {', '.join(found) or 'none'}, the contract has {', '.join(wanted)}"]
    return []


def _as_typed(name: str | None) -> str | None:
    """A waiver's node or op type without the invisible word joiners (U+2060) that Markdown
    reports put after "#" and "@" so GitHub does not link them: a name copied from a rendered
    report matches."""
    return None if name is None else name.replace(WORD_JOINER, "")


def _torch_model(model: dict[str, Any]) -> TorchModel | None:
    if "torch" not in model:
        return None
    t = model["torch"]
    return TorchModel(
        factory=t["factory"],
        kwargs=dict(t.get("kwargs", {})),
        exporter=t.get("exporter", "dynamo"),
        opset=int(t.get("opset", 18)),
        compare_exporters=bool(t.get("compare_exporters", False)),
        path=tuple(t.get("path", [])),
    )


def _quantization(doc: dict[str, Any] | None, folder: Path) -> Quantization | None:
    if doc is None:
        return None
    mode = doc.get("mode", Quantization.mode)
    activations, weights = QUANT_DTYPES.get(mode, ("uint8", "int8"))

    def samples(part: dict[str, Any]) -> QuantSamples:
        ref = part.get("samples_file")
        return QuantSamples(folder / ref if ref else None, part.get("count"))

    return Quantization(mode=mode, activations=doc.get("activations", activations),
                        weights=doc.get("weights", weights), per_channel=bool(doc.get("per_channel", True)),
                        method=doc.get("method", Quantization.method),
                        calibration=samples(doc.get("calibration", {})), holdout=samples(doc.get("holdout", {})))


def _quant_rows(q: Quantization, files: dict[str, Path], inputs: list[InputSpec], label: str,
                ) -> tuple[list[dict[str, np.ndarray]] | None, list[dict[str, np.ndarray]] | None]:
    """The calibration and hold-out rows of the quantization samples files (None: synthetic).
    One file for both: calibration takes its first rows, hold-out the rows after them, so a
    hold-out sample is never a calibration sample; too few rows for both is an error."""
    from npu_gate.contract.samples_file import read_samples

    calib_path = files.get("quantization.calibration.samples_file")
    hold_path = files.get("quantization.holdout.samples_file")
    if calib_path is None and hold_path is None:
        return None, None
    calib = None
    if calib_path is not None:
        calib = read_samples(calib_path, inputs, "quantization.calibration.samples_file")
    shared = hold_path is None or (calib_path is not None and hold_path.resolve() == calib_path.resolve())
    if calib_path is not None and calib is not None and shared:
        hold_count = q.holdout.count or HOLDOUT_COUNT
        calib_count = q.calibration.count or len(calib) - hold_count
        if calib_count < 1 or calib_count + hold_count > len(calib):
            raise ContractError(
                f"{label}: quantization: {calib_path.name} has {len(calib)} rows, fewer than "
                f"{max(calib_count, 1)} calibration + {hold_count} hold-out samples (hold-out samples are never "
                "calibration samples: give more rows, smaller counts or a holdout.samples_file)")
        return calib[:calib_count], calib[calib_count:calib_count + hold_count]
    hold = read_samples(hold_path, inputs, "quantization.holdout.samples_file") if hold_path is not None else None
    out = []
    for name, rows, count in (("calibration", calib, q.calibration.count), ("holdout", hold, q.holdout.count)):
        if rows is not None and count is not None and count > len(rows):
            raise ContractError(f"{label}: quantization.{name}.count: {count} is more than the "
                                f"{len(rows)} rows of its samples_file")
        out.append(rows[:count] if rows is not None and count is not None else rows)
    return out[0], out[1]


def _rewrite_request(item: str | dict[str, Any]) -> RewriteRequest:
    if isinstance(item, str):
        return RewriteRequest(item)
    return RewriteRequest(item["name"], item.get("atol"), item.get("rtol"))


def _ethos_u_problems(doc: dict[str, Any], label: str) -> list[str]:
    """The ethos-u probe runs Arm's PyTorch flow on the contract's factory and ties its nodes to
    the dynamo export's: an ONNX model or the TorchScript exporter cannot be probed."""
    torch = doc["model"].get("torch")
    if torch is None:
        return [f"{label}: target.probe.compiler: ethos-u probes a torch model (model.torch) only: the ONNX "
                "route (onnx2tf to int8 TFLite, then Vela) is not built yet, because its result depends on that "
                "converter as much as on Vela (docs/ethos-u.md)"]
    if torch.get("exporter", "dynamo") != "dynamo":
        return [f"{label}: model.torch.exporter: the ethos-u probe ties the compiler's nodes to the ONNX nodes "
                "through the dynamo exporter's metadata: use \"dynamo\" (got "
                f"{torch['exporter']!r})"]
    return []


def _probe_spec(doc: dict[str, Any] | None, folder: Path) -> ProbeSpec | None:
    if doc is None:
        return None
    return ProbeSpec(compiler=doc["compiler"], target=doc["target"],
                     venv=folder / doc["venv"] if "venv" in doc else None,
                     decide=doc.get("decide", "prediction"), timeout=doc.get("timeout"),
                     soc_model=doc.get("soc_model"))


def _input_spec(doc: dict[str, Any], dynamic_dims: dict[str, int] | None = None) -> InputSpec:
    default = (0.0, 1.0) if doc["dtype"] in FLOAT_DTYPES else (0.0, 10.0)
    if doc["dtype"] == "bool":
        default = (0.0, 1.0)
    lo, hi = doc.get("range", default)
    names = tuple(d if isinstance(d, str) else None for d in doc["shape"])
    return InputSpec(doc["name"], example_shape(doc["shape"], dynamic_dims or {}), doc["dtype"], doc.get("layout"),
                     (lo, hi), names if any(names) else ())


def example_shape(shape: list[int | str], dynamic_dims: dict[str, int]) -> list[int]:
    """A contract shape with each named dim at its example size (``dynamic_dims``; 1 when it has
    none, which ``_semantic_problems`` reports)."""
    return [d if isinstance(d, int) else int(dynamic_dims.get(d, 1)) for d in shape]


def _range_problems(dtype: str, lo: float, hi: float) -> list[str]:
    """What keeps numerics samples of ``dtype`` from being drawn from [lo, hi]: values the
    dtype cannot hold would wrap around (integers) or become infinite (floats)."""
    low, high = DTYPE_BOUNDS[dtype]
    if lo < low or hi > high:
        return [f"[{lo}, {hi}] is outside what {dtype} holds, [{low:g}, {high:g}]" if dtype in FLOAT_DTYPES
                else f"[{lo}, {hi}] is outside what {dtype} holds, [{low}, {high}]"]
    if dtype not in FLOAT_DTYPES and math.ceil(lo) > math.floor(hi):
        return [f"[{lo}, {hi}] holds no whole number, so no {dtype} value to sample"]
    return []


def _semantic_problems(doc: dict[str, Any], label: str) -> list[str]:
    problems = []
    seen: set[str] = set()
    sampled = doc.get("numerics", {}).get("samples", Numerics.samples) > 0
    dynamic_dims = doc.get("dynamic_dims", {})
    dims_named: set[str] = set()
    for i, spec in enumerate(doc["inputs"]):
        if spec["name"] in seen:
            problems.append(f"{label}: inputs[{i}].name: duplicate input {spec['name']!r}")
        seen.add(spec["name"])
        for k, d in enumerate(spec["shape"]):
            if isinstance(d, str):
                dims_named.add(d)
                if d not in dynamic_dims:
                    problems.append(f"{label}: inputs[{i}].shape[{k}]: the named dim {d!r} has no example size: "
                                    f"add dynamic_dims.{d} (the size the analysis and the samples use)")
        size = math.prod(example_shape(spec["shape"], dynamic_dims)) * DTYPE_BYTES[spec["dtype"]]
        if sampled and size > MAX_SAMPLE_BYTES:
            problems.append(f"{label}: inputs[{i}].shape: one sample is {size:,} bytes, more than the "
                            f"{MAX_SAMPLE_BYTES:,} npu-gate draws per input (numerics.samples 0 draws none)")
        if "range" in spec and spec["range"][0] > spec["range"][1]:
            lo, hi = spec["range"]
            problems.append(f"{label}: inputs[{i}].range: low {lo} is above high {hi}")
        elif "range" in spec:
            problems.extend(f"{label}: inputs[{i}].range: {p}" for p in _range_problems(spec["dtype"], *spec["range"]))
        layout = spec.get("layout")
        if layout is not None and len(layout) != len(spec["shape"]):
            problems.append(
                f"{label}: inputs[{i}].layout: {layout!r} has {len(layout)} letters "
                f"but the shape has rank {len(spec['shape'])}"
            )
        if layout is not None and len(set(layout)) != len(layout):
            again = sorted({c for c in layout if layout.count(c) > 1})
            problems.append(f"{label}: inputs[{i}].layout: {layout!r} names {', '.join(again)} more than once: "
                            "each letter is one dimension")
    from npu_gate.contract.rewrite_names import REWRITE_NAMES  # the catalog itself imports onnx

    problems += [f"{label}: dynamic_dims.{d}: no inputs[].shape names it" for d in dynamic_dims if d not in dims_named]
    if dims_named and "onnx" in doc["model"]:
        problems.append(f"{label}: inputs[].shape: a named dim ({', '.join(sorted(dims_named))}) is for a torch model, "
                        "exported with that dim dynamic; an ONNX model's dims are its own: give its static size")
    named: set[str] = set()
    for i, item in enumerate(doc.get("rewrites", [])):
        name = item if isinstance(item, str) else item["name"]
        if name not in REWRITE_NAMES:
            problems.append(f"{label}: rewrites[{i}]: unknown rewrite {name!r} "
                            f"(known: {', '.join(REWRITE_NAMES)})")
        elif name in named:
            problems.append(f"{label}: rewrites[{i}]: {name!r} is named twice")
        named.add(name)
    for gate in ("min_output_sqnr_db", "min_output_cosine"):
        if doc.get("gates", {}).get(gate) is not None and (
                "quantization" not in doc or doc["quantization"].get("mode", "int8") not in QUANT_DTYPES):
            problems.append(f"{label}: gates.{gate}: needs a quantization with mode int8 or int16 "
                            "(the figure is measured on the quantized model)")
    probe = doc["target"].get("probe")
    if probe is not None and probe["compiler"] not in COMPILERS:
        problems.append(f"{label}: target.probe.compiler: unknown compiler {probe['compiler']!r} "
                        f"(known: {', '.join(KNOWN)})")
    if probe is not None and probe["compiler"] == "ethos-u":
        problems += _ethos_u_problems(doc, label)
    if probe is not None and "soc_model" in probe and probe["compiler"] != "qnn":
        problems.append(f"{label}: target.probe.soc_model: only the qnn compiler takes a SoC model "
                        f"(compiler is {probe['compiler']!r})")
    for i, waiver in enumerate(doc.get("waivers", [])):
        rule = RULES.get(waiver["rule"])
        if rule is None or not rule.finding:
            known = ", ".join(r.id for r in RULES.values() if r.finding and r.id not in UNWAIVABLE)
            problems.append(
                f"{label}: waivers[{i}].rule: unknown rule {waiver['rule']!r} (known: {known})"
            )
        elif rule.id in UNWAIVABLE:
            problems.append(f"{label}: waivers[{i}].rule: {rule.id} {UNWAIVABLE[rule.id]} and cannot be waived")
        if "expires" in waiver:
            try:
                dt.date.fromisoformat(waiver["expires"])
            except ValueError:
                problems.append(
                    f"{label}: waivers[{i}].expires: {waiver['expires']!r} is not a date"
                )
    return problems

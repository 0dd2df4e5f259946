"""The evidence bundle: everything a reviewer or a vendor engineer needs to replay a run.

One folder per contract run (``check --out DIR``, or ``check --bundle`` for
``npu-gate-out/<contract name>/``)::

    model.onnx (+ external data)  the model as exported / given
    folded.onnx                   what a compiler would see: folded nodes as initializers
    result.json, report.md        byte-identical across runs except timings
    conversion.log                exporter and numerics output, with timings
    versions.json                 tools, exporter, profile/contract/model hashes
    <contract file>               a copy of the contract
    inputs.npz                    the samples used for numerics, one array per input
    quantized.onnx                contract quantization: the quantized graph that was measured
    qnn-qdq.onnx                  target.probe qnn with quantization int8/int16: the QDQ model the EP built
    minimal/                      the smallest model for each distinct failure

Paths inside result.json and report.md are relative to the bundle or the contract, so
two bundles of the same run in different folders compare equal. ``versions.json`` lists
the bundle's files: only a folder holding exactly such a bundle is ever replaced, and a
run fills a staging folder that replaces it only once the run has a verdict. Two runs publishing
into one folder at once take turns (a lock on the parent folder, see ``_publishing``); a run
stopped by SIGINT or SIGTERM removes its staging folder.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
import re
import shutil
import signal
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from npu_gate.contract.spec import Contract
from npu_gate.errors import GateError
from npu_gate.files import MAX_DOCUMENT_BYTES, read_regular_text
from npu_gate.pipeline import Artifacts
from npu_gate.profile.spec import Profile
from npu_gate.result.types import GateResult
from npu_gate.versions import tool_versions as versions

if TYPE_CHECKING:  # onnx is imported where a model is written
    from onnx import ModelProto

DEFAULT_ROOT = Path("npu-gate-out")
MARKER = "versions.json"  # with a manifest of the bundle's files: what npu-gate may replace
BUNDLE_KIND = "npu-gate-bundle"


def default_folder(contract: Contract) -> Path:
    """``npu-gate-out/<contract name>/``, the name made safe as one folder name (cut to 100
    characters: file systems refuse names above 255 bytes)."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", contract.name)[:100].strip("-.") or "contract"
    return DEFAULT_ROOT / name


def check_target(folder: Path) -> None:
    """Refuse a bundle folder that npu-gate must not replace (before any model runs)."""
    target = folder.resolve()
    cwd = Path.cwd().resolve()
    if target == cwd or target in cwd.parents:
        raise GateError(f"{folder}: is the current folder or holds it; choose a folder of its own for the bundle")
    if not folder.exists():
        return
    if not folder.is_dir():
        raise GateError(f"{folder}: exists and is not a folder")
    if not any(folder.iterdir()):
        return
    previous = _previous_bundle_files(folder)
    if previous is None:  # decided before walking the folder, which may be huge (--out ~)
        raise GateError(f"{folder}: not empty and not an npu-gate bundle (no {MARKER} naming its files); "
                        "refusing to overwrite it")
    foreign = sorted(_files_in(folder) - previous)
    if foreign:
        shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
        raise GateError(f"{folder}: holds files the previous bundle did not write ({shown}); "
                        "refusing to overwrite it")


@contextlib.contextmanager
def staged(folder: Path) -> Iterator[Path]:
    """A fresh staging folder beside ``folder`` for the run to fill. When the block ends
    normally the staging folder replaces ``folder`` (a previous bundle); when it raises
    (the run could not run: exit 2), it is removed and ``folder`` is left as it was."""
    check_target(folder)
    parent = folder.resolve().parent
    created = [p for p in (parent, *parent.parents) if not p.exists()]  # deepest first
    try:
        parent.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix=f".{folder.resolve().name}.", suffix=".partial", dir=parent))
        # mkdtemp's folder is private (0700); the bundle gets the permissions any new folder gets.
        stage = scratch / "bundle"
        stage.mkdir()
    except OSError as exc:
        _remove_empty(created)
        raise GateError(f"{folder}: cannot create: {exc.strerror}") from None
    published = False
    try:
        yield stage
        _publish(stage, folder)
        published = True
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        if not published:
            _remove_empty(created)  # a run that could not run leaves no folder behind


def _remove_empty(folders: list[Path]) -> None:
    """Remove the folders a run created, deepest first, while they are empty."""
    for path in folders:
        try:
            path.rmdir()
        except OSError:
            return


@contextlib.contextmanager
def _publishing(parent: Path) -> Iterator[None]:
    """One publisher at a time in ``parent``: two runs with the same --out (parallel CI jobs,
    a re-run started before the first ended) would otherwise move each other's folder away
    between the check and the rename. The lock is an ``flock`` on the parent folder itself, so
    no lock file is left behind; it ends with the process, however it ends (no lock where there
    is no fcntl: Windows). While it is held, SIGINT and SIGTERM wait (a signal between the two
    renames would leave the previous bundle in its ``.old`` folder and none in its place)."""
    fd = None
    if sys.platform != "win32":
        import fcntl

        try:
            fd = os.open(parent, os.O_RDONLY)
            fcntl.flock(fd, fcntl.LOCK_EX)  # a signal while waiting interrupts the wait
        except OSError:
            if fd is not None:
                os.close(fd)
            fd = None
    mask = None
    if hasattr(signal, "pthread_sigmask"):
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        yield
    finally:
        if mask is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)  # a pending signal is delivered now
        if fd is not None:
            os.close(fd)  # and the lock released


def _publish(stage: Path, folder: Path) -> None:
    with _publishing(folder.resolve().parent):
        _replace(stage, folder)


def _replace(stage: Path, folder: Path) -> None:
    check_target(folder)  # again: something may have written there during the run
    target = folder.resolve()
    if not folder.exists():
        stage.rename(target)
        return
    old = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".old", dir=target.parent))
    old.rmdir()
    target.rename(old)
    try:
        stage.rename(target)
    except OSError:
        old.rename(target)  # put the previous bundle back
        raise
    shutil.rmtree(old, ignore_errors=True)


def _files_in(folder: Path) -> set[str]:
    """Relative POSIX paths of every file and link under ``folder`` (folders themselves excluded)."""
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if not p.is_dir() or p.is_symlink()}


def _previous_bundle_files(folder: Path) -> set[str] | None:
    """The files a previous bundle's manifest lists, or None when ``folder`` holds no bundle."""
    try:  # a FIFO or /dev/zero planted under the marker's name: never read (nor waited on)
        doc = json.loads(read_regular_text(folder / MARKER, str(folder / MARKER), MAX_DOCUMENT_BYTES))
    except ValueError:  # also UnreadableFile: missing, not a regular file, too large
        return None
    manifest = doc.get("bundle") if isinstance(doc, dict) else None
    if not isinstance(manifest, dict) or manifest.get("kind") != BUNDLE_KIND:
        return None
    files = manifest.get("files")
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        return None
    return set(files)


def write(folder: Path, contract: Contract, result: GateResult, art: Artifacts) -> None:
    """Fill the bundle (after ``check_contract(..., keep=art)``); sets ``result.minimal``."""
    write_any(folder, result, art, contract.profile, contract)


def write_any(
    folder: Path, result: GateResult, art: Artifacts, profile: Profile, contract: Contract | None
) -> None:
    """The bundle of a contract run, or of ``inspect`` (``contract`` None: no contract
    copy and no inputs.npz, since inspect runs no numerics)."""
    from npu_gate.evidence.minimal import write_minimal
    from npu_gate.graph.edit import folded_model
    from npu_gate.render import json_, markdown

    fold_note = "no model analysed"
    if art.inferred is not None and art.facts is not None:
        folded, fold_note = folded_model(art.inferred, art.folded)
        _save_model(folded, folder / "folded.onnx")
        models, distinct = write_minimal(folder / "minimal", art.inferred, art.facts, art.folded,
                                         result.findings, profile, folder)
        result.minimal = {"distinct_failures": distinct, "models": models}
    else:
        result.minimal = {"distinct_failures": 0, "models": []}
    (folder / "result.json").write_text(json_.render(result), encoding="utf-8")
    (folder / "report.md").write_text(markdown.render(result), encoding="utf-8")
    (folder / "conversion.log").write_text(_conversion_log(result, fold_note), encoding="utf-8")
    if contract is not None:
        shutil.copyfile(contract.path, folder / contract_copy_name(contract))
        samples = art.samples
        if not samples:  # numerics did not run: the seeded samples it would have used
            from npu_gate.model.samples import make_samples

            spec = contract.numerics
            samples = make_samples(contract.inputs, spec.samples, spec.seed)
        names = [i.name for i in contract.inputs]
        write_npz(folder / "inputs.npz", stack_samples(samples, names))
    doc = bundle_versions(contract, result, art, profile)
    doc["bundle"] = {"kind": BUNDLE_KIND, "files": sorted(_files_in(folder) | {MARKER})}
    (folder / MARKER).write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")


_OWN = {"model.onnx", "folded.onnx", "result.json", "report.md", "conversion.log", MARKER,
        "inputs.npz", "quantized.onnx", "qnn-qdq.onnx"}


def contract_copy_name(contract: Contract) -> str:
    name = contract.path.name
    return f"contract-{name}" if name in _OWN else name


def _save_model(model: ModelProto, path: Path) -> None:
    import onnx

    if model.ByteSize() < 2_000_000_000:
        path.write_bytes(model.SerializeToString())
    else:  # protobuf's 2 GB limit: weights go beside it
        onnx.save_model(model, str(path), save_as_external_data=True,
                        location=path.name + ".data", all_tensors_to_one_file=True)


def _conversion_log(result: GateResult, fold_note: str) -> str:
    lines = [f"npu-gate conversion log: {result.name}", ""]
    for stage, info in result.stages.items():
        reason = f" ({info['reason']})" if info.get("reason") else ""
        lines.append(f"{stage}: {info.get('status')}{reason}")
    lines.append(f"folding: {fold_note}")
    lines += ["", "timings (seconds, this machine):"]
    lines += [f"  {k}: {v:.3f}" for k, v in result.timings.items()]
    lines += ["", f"output captured from the exporter and numerics ({len(result.log)} lines):"]
    lines += result.log
    return "\n".join(lines) + "\n"


def stack_samples(samples: list[dict[str, np.ndarray]], names: list[str]) -> dict[str, np.ndarray]:
    """One array per input, samples stacked on a new first axis (sample k is row k)."""
    out: dict[str, np.ndarray] = {}
    for name in names:
        rows = [s[name] for s in samples if name in s]
        if rows:
            out[name] = np.stack(rows)
    return out


def write_npz(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """``np.savez`` layout (``np.load`` reads it) with fixed zip timestamps: reproducible bytes."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as zf:
        for name, array in arrays.items():
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            with zf.open(info, "w", force_zip64=True) as f:
                np.lib.format.write_array(f, np.asarray(array), allow_pickle=False)


def _sha256(path: Path | None) -> str | None:
    if path is None or not path.is_file():
        return None
    return hashlib.sha256(path.read_bytes()).hexdigest()


def bundle_versions(
    contract: Contract | None, result: GateResult, art: Artifacts, profile: Profile
) -> dict[str, Any]:
    tools = versions()
    model = result.model
    if contract is not None and contract.torch is not None:
        exporter: dict[str, Any] = {"path": contract.torch.exporter,
                                    "opset_requested": contract.torch.opset}
    else:
        exporter = {"path": "onnx-file", "opset_requested": None}
    exporter["opset"] = model.get("opset")
    return {
        "python": tools["python"],
        "platform": platform.platform(),
        "machine": platform.machine(),
        "npu_gate": tools["npu_gate"],
        "torch": tools["torch"],
        "onnx": tools["onnx"],
        "onnxruntime": tools["onnxruntime"],
        "onnxscript": tools["onnxscript"],
        "exporter": exporter,
        "profile": {"name": profile.name, "sha256": profile.sha256,
                    "builtin": profile.origin == "builtin"},
        "contract": None if contract is None else {"file": contract_copy_name(contract),
                                                   "sha256": contract.sha256},
        "model": {"file": "model.onnx" if art.model_path else None,
                  "sha256": _sha256(art.model_path)},
    }

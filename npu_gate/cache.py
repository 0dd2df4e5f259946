"""Result cache: an unchanged model against an unchanged contract is not gated twice.

A key is the sha256 of everything a result depends on: the model (the ONNX file's
bytes, or for a torch factory every file under the contract folder), the contract's
bytes and path, the resolved profile, which waivers have expired, the versions of
python/onnx/onnxruntime/torch/onnxscript (from package metadata, never by importing
them), npu_gate's version and a digest of npu_gate's own installed files (``code_digest``:
a new commit keeps the version string, so the version alone cannot tell two builds apart),
and for a ``target.probe`` contract the compiler venv it builds in (``probe_environment``).
An entry holds what the CLI prints and writes (JSON, Markdown, terminal text, conversion
log) and the exit code, so a hit needs none of onnx, onnxruntime, numpy or torch: this
module imports the standard library only (and, on a hit, npu_gate's result reader, to derive the
verdict again: ``replay_problem``).

ONNX external data files are not known before the model is parsed; an entry lists them
with their sha256 and a hit re-checks them (stat first, hash when the stat changed).

Entries are written atomically (temp file + ``os.replace``), so concurrent runs never see
half an entry; an unreadable, foreign or tampered entry is ignored and rewritten, and one whose
stored verdict or exit code is not what its findings and gates give is refused (the run is done
again): docs/cache.md, "Trust".
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import hashlib
import json
import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from npu_gate import __version__
from npu_gate.resources import schema_dir
from npu_gate.versions import tool_versions

if TYPE_CHECKING:  # annotations only: this module imports the standard library only
    from npu_gate.contract.spec import Contract, ProbeSpec
    from npu_gate.profile.spec import Profile

ENV_VAR = "NPU_GATE_CACHE_DIR"
FORMAT = 1  # layout of an entry file; bump when it changes
# A torch contract folder is hashed whole; past these limits it is not cached.
MAX_FILES = 2000
MAX_BYTES = 256 * 1024 * 1024
SKIP_DIRS = {"__pycache__", "node_modules", "venv", "site-packages"}


class NotCacheable(Exception):
    """This run cannot be keyed safely; it runs fresh and is not stored."""


@dataclass(frozen=True)
class Dependency:
    """A file the result depends on that is not part of the key (ONNX external data)."""

    path: str
    size: int
    mtime_ns: int
    sha256: str

    @classmethod
    def of(cls, path: Path) -> Dependency:
        st = path.stat()
        return cls(str(path.resolve()), st.st_size, st.st_mtime_ns, _sha256_file(path))

    def unchanged(self) -> bool:
        try:
            st = os.stat(self.path)
        except OSError:
            return False
        if st.st_size != self.size:
            return False
        return st.st_mtime_ns == self.mtime_ns or _sha256_file(Path(self.path)) == self.sha256


@dataclass
class Entry:
    key: str
    exit_code: int
    json: str
    markdown: str
    text: str
    log: list[str] = field(default_factory=list)
    deps: list[Dependency] = field(default_factory=list)
    created: str = ""

    def payload(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "npu_gate": __version__,
            "key": self.key,
            "created": self.created,
            "exit_code": self.exit_code,
            "json": self.json,
            "markdown": self.markdown,
            "text": self.text,
            "log": self.log,
            "deps": [d.__dict__ for d in self.deps],
        }


def default_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "npu-gate"


def resolve_dir(option: str | None) -> Path:
    """``--cache-dir``, else ``$NPU_GATE_CACHE_DIR``, else the user cache dir."""
    return Path(option or os.environ.get(ENV_VAR) or default_dir())


class Store:
    """Entries live at ``<dir>/<npu_gate version>/<key[:2]>/<key>.json``."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def path(self, key: str) -> Path:
        return self.root / __version__ / key[:2] / f"{key}.json"

    def get(self, key: str) -> Entry | None:
        """The entry for ``key``, or None when missing, unreadable or stale."""
        try:
            doc = json.loads(self.path(key).read_text(encoding="utf-8"))
            entry = _entry_from(doc, key)
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None  # corrupted or half-foreign: a miss; the next store replaces it
        if entry is None or not all(d.unchanged() for d in entry.deps):
            return None
        return entry

    def put(self, entry: Entry) -> None:
        """Write atomically; a cache that cannot be written never fails the gate."""
        target = self.path(entry.key)
        payload = entry.payload()
        payload["digest"] = _digest(payload)
        tmp = None
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=target.parent)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(payload, f, ensure_ascii=False)
            os.replace(tmp, target)
            tmp = None
        except OSError:
            pass
        finally:
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)


def _digest(payload: dict[str, Any]) -> str:
    body = {k: v for k, v in payload.items() if k != "digest"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def _entry_from(doc: dict[str, Any], key: str) -> Entry | None:
    if (doc.get("format") != FORMAT or doc.get("npu_gate") != __version__ or doc.get("key") != key
            or doc.get("digest") != _digest(doc) or doc.get("exit_code") not in (0, 1)):
        return None
    texts = [doc["json"], doc["markdown"], doc["text"], *doc["log"]]
    if not all(isinstance(t, str) for t in texts):
        return None
    deps = [Dependency(str(d["path"]), int(d["size"]), int(d["mtime_ns"]), str(d["sha256"]))
            for d in doc["deps"]]
    return Entry(key, doc["exit_code"], doc["json"], doc["markdown"], doc["text"], list(doc["log"]),
                 deps, str(doc.get("created", "")))


def replay_problem(entry: Entry) -> str | None:
    """Why ``entry`` must not be replayed, or None. Its digest only catches damage: whoever can
    write the cache folder can write an entry with a matching digest. So on every hit the verdict
    is derived again from the stored JSON's findings and gates, and both the JSON's verdict and the
    stored exit code must be that verdict: an entry cannot turn a failing result into a pass."""
    from npu_gate.result.read import document_verdict
    from npu_gate.result.types import PASS

    try:
        doc = json.loads(entry.json)
        derived = document_verdict(doc)
    except (ValueError, KeyError, TypeError, AttributeError):
        return "its JSON is not a result"
    if doc.get("verdict") != derived:
        return f"its verdict {str(doc.get('verdict'))[:20]!r} contradicts its findings and gates ({derived!r})"
    if entry.exit_code != (0 if derived == PASS else 1):
        return f"its exit code {entry.exit_code} contradicts its verdict {derived!r}"
    return None


def new_entry(key: str, exit_code: int, json_text: str, markdown: str, text: str,
              log: list[str], deps: list[Dependency]) -> Entry:
    created = dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat()
    return Entry(key, exit_code, json_text, markdown, text, log, deps, created)


# --- keys -------------------------------------------------------------------------------

def make_key(parts: dict[str, Any]) -> str:
    doc = {"format": FORMAT, "npu_gate": __version__, "code": code_digest(), "versions": tool_versions(),
           **parts}
    return hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()


@functools.cache
def code_digest() -> str:
    """sha256 of npu_gate's own code and data as installed: every file of the package (its
    .py files, built-in profiles and calibration records) and the JSON Schemas. Computed once
    per process, and only by runs that use the cache."""
    package = Path(__file__).resolve().parent
    folders = {"npu_gate": package}
    schemas = schema_dir().resolve()
    if not schemas.is_relative_to(package):  # a source checkout: the repository's schemas/
        folders["schemas"] = schemas
    return tree_digest(folders)


def tree_digest(folders: dict[str, Path]) -> str:
    """One sha256 over the files under each folder (label -> folder): sorted relative paths
    and their bytes. ``__pycache__``, compiled and hidden files are left out."""
    files = []
    for label, folder in folders.items():
        for dirpath, dirnames, filenames in os.walk(folder):
            dirnames[:] = [d for d in dirnames if not d.startswith(".") and d != "__pycache__"]
            for name in filenames:
                if not name.startswith(".") and not name.endswith((".pyc", ".pyo")):
                    path = Path(dirpath) / name
                    files.append((f"{label}/{path.relative_to(folder).as_posix()}", path))
    h = hashlib.sha256()
    for rel, path in sorted(files):
        data = path.read_bytes()
        h.update(f"{rel}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()


def contract_key(contract: Contract, today: dt.date, exclude: Iterable[Path] = ()) -> str:
    """The key of gating ``contract`` on ``today``.

    ``exclude``: files this run writes (--json, --markdown, --log); when they sit in the
    contract folder they must not change the key of the next run.
    """
    parts: dict[str, Any] = {
        "kind": "check",
        "contract": str(Path(contract.path).resolve()),
        "contract_sha256": contract.sha256,
        "profile_sha256": contract.profile.sha256,
        # Waivers depend on the date only through whether each one has expired.
        "expired": [w.expires is not None and w.expires < today for w in contract.waivers],
    }
    folder = Path(contract.path).resolve().parent
    if contract.onnx_path is not None:
        parts["model"] = {"onnx": _sha256_file(Path(contract.onnx_path))}
    else:
        assert contract.torch is not None  # a contract names an ONNX model or a torch factory
        # The code the factory imports is a dependency of the entry (the files the run's child
        # process imported, wherever they are); the data beside the contract is keyed here.
        parts["model"] = {"torch": True}
    # Everything else the contract names changes the result too: its files' bytes, and the
    # code of a metric or a torch replacement (imported from the contract folder).
    files = {"samples_file": contract.numerics.samples_file, "device_timings": contract.device_timings,
             "replacement_onnx": contract.replacement.onnx_path if contract.replacement else None}
    if contract.quantization is not None:  # the calibration and hold-out rows
        files["quantization_calibration"] = contract.quantization.calibration.samples_file
        files["quantization_holdout"] = contract.quantization.holdout.samples_file
    parts["files"] = {k: _sha256_file(Path(v)) for k, v in files.items() if v is not None and Path(v).is_file()}
    code = contract.torch is not None or contract.metric is not None or (
        contract.replacement is not None and contract.replacement.torch is not None)
    if code:  # the contract's code runs: what it may read beside the contract (not its .py files)
        parts["data"] = folder_fingerprint(folder, exclude, data_only=True)
        parts["import_folders"] = [str(f) for f in contract.import_folders]
    if contract.probe is not None:
        parts["probe"] = probe_environment(contract.probe)
    return make_key(parts)


def probe_environment(spec: ProbeSpec) -> dict[str, Any]:
    """What a ``target.probe`` verdict rests on besides the model and the contract: the compiler
    venv (its resolved path and interpreter, and the ``npu-gate-probe.json`` that ``probe setup``
    wrote) and the compiler package's installed version, read from the venv's files (nothing is
    imported or run). Computed on every lookup, so a venv that is gone is never answered from the
    cache: the run goes to the probe, which says what is missing (exit 2)."""
    from npu_gate.probe import get_compiler, venv_for
    from npu_gate.probe.setup_env import MANIFEST

    compiler = get_compiler(spec.compiler)
    venv = venv_for(spec.venv, compiler)
    python = compiler.python(venv)
    if not python.exists():
        raise NotCacheable(f"target.probe: {python} does not exist")
    manifest = venv / MANIFEST
    return {"compiler": compiler.name, "venv": str(venv.resolve()), "python": str(python.resolve()),
            "manifest": _sha256_file(manifest) if manifest.is_file() else None,
            "installed": compiler.installed_version(venv)}


def inspect_key(model: Path, profile: Profile) -> str:
    return make_key({"kind": "inspect", "model_path": str(model.resolve()),
                     "model": {"onnx": _sha256_file(model)}, "profile_sha256": profile.sha256})


def folder_fingerprint(folder: Path, exclude: Iterable[Path] = (), *, data_only: bool = False) -> dict[str, str]:
    """sha256 of every file under ``folder`` (whatever data the contract's code reads),
    skipping hidden entries, caches and virtualenvs; ``data_only``: not the Python sources,
    which are keyed as the modules the run imported (``code_dependencies``)."""
    skip = {Path(p).resolve() for p in exclude}
    out: dict[str, str] = {}
    total = 0
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in SKIP_DIRS)
        for name in sorted(filenames):
            if name.startswith(".") or name.endswith(".pyc") or (data_only and name.endswith(".py")):
                continue
            path = Path(dirpath) / name
            if path.resolve() in skip or not path.is_file():
                continue
            total += path.stat().st_size
            if len(out) >= MAX_FILES or total > MAX_BYTES:
                raise NotCacheable(f"{folder} holds more than {MAX_FILES} files or "
                                   f"{MAX_BYTES >> 20} MiB; give the model its own folder")
            out[path.relative_to(folder).as_posix()] = _sha256_file(path)
    return out


def code_dependencies(files: list[str] | None) -> list[Dependency] | None:
    """The contract's code files a run imported, as dependencies of its entry (None: not known,
    so not cacheable)."""
    if files is None:
        return None
    try:
        return [Dependency.of(Path(f)) for f in files]
    except OSError:
        return None


def onnx_dependencies(model: Path) -> list[Dependency] | None:
    """The external data files of an ONNX model (called after a fresh run: onnx is loaded);
    None when they cannot be listed, and then the result is not stored."""
    import onnx

    from npu_gate.graph.model_file import external_tensors

    try:
        proto = onnx.load(str(model), load_external_data=False)
        folder = model.resolve().parent
        names = sorted({e.value for t in external_tensors(proto.graph) for e in t.external_data
                        if e.key == "location"})
        return [Dependency.of(folder / n) for n in names if (folder / n).is_file()]
    except Exception:
        return None


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()

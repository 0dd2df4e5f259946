"""Where a node came from in the user's PyTorch code, and a node identity that survives a re-export.

The exporters leave this in the model: the dynamo exporter puts the FX node's Python stack
(``pkg.torch.onnx.stack_trace``), its module scopes (``pkg.torch.onnx.name_scopes``, e.g.
``['', 'up', 'up.conv', 'conv2d_1']``) and their classes (``pkg.torch.onnx.class_hierarchy``)
into each node's ``metadata_props``; the TorchScript exporter names nodes after their module
path (``/features/features.0/features.0.2/HardSwish``). Everything here is text from the model:
parsed with regular expressions, never evaluated, and only ever displayed (escaped) or matched.

``stable_keys`` names each node ``module_path/OpType#n`` (the n-th node of that op type in that
module, in graph order), computed the same way for both exporters, so a change to one layer
leaves every other layer's keys alone. Source lines are not part of the key: an edit above a
layer shifts the lines of every layer below it.
"""

from __future__ import annotations

import functools
import importlib.util
import itertools
import re
import sysconfig
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

if TYPE_CHECKING:  # a contract's load and a cache hit import this module for repository_root, never onnx
    from onnx import NodeProto

STACK_TRACE = "pkg.torch.onnx.stack_trace"
NAME_SCOPES = "pkg.torch.onnx.name_scopes"
CLASS_HIERARCHY = "pkg.torch.onnx.class_hierarchy"
NAMESPACE = "namespace"  # older dynamo exporters: ": models.zoo.Net/up: models.zoo.Up/conv2d: aten..."

# A line number of more than MAX_LINE_DIGITS digits is no source line (and int() of 5,000 digits
# raises): such a frame does not match, and is dropped.
MAX_LINE_DIGITS = 9
_FRAME = re.compile(rf'File "(?P<file>[^"\n]+)", line (?P<line>\d{{1,{MAX_LINE_DIGITS}}}), in (?P<function>[^\n]+)\n'
                    r'(?P<code>[^\n]*)')
_QUOTED = re.compile(r"'((?:[^'\\]|\\.)*)'")
# Frames in installed packages are the library's, not the user's: the user's own frame is the
# innermost other one (below: torch, npu_gate and the standard library wherever they live here).
_LIBRARY_PARTS = ("/site-packages/", "/dist-packages/")
_MAX_TEXT = 20_000  # metadata longer than this is not parsed (a hostile model's, not an exporter's)
_MAX_CODE = 200
# A file name no file system holds (a NUL byte, a name longer than NAME_MAX or a path longer than
# PATH_MAX, Linux's limits) is never looked up: it is a name outside the repository, kept shortened.
NAME_MAX = 255
PATH_MAX = 4096
MAX_FILE = 300  # characters of a file name outside the repository that a source keeps
OUTSIDE = "outside the repository"


class Source(TypedDict):
    """What is known of where a node came from; None where it is not."""

    file: str | None  # relative to the repository root when it lies under it
    line: int | None  # None for a file outside the repository: no file:line points outside it
    function: str | None
    code: str | None  # the source line, stripped
    module_path: str | None  # the nn.Module's attribute path ("up.conv"; "" for the root module)
    module_class: str | None  # its class, qualified as the exporter gives it
    root_class: str | None  # the exported module's class


def repository_root(start: Path) -> Path | None:
    """The git work tree holding ``start`` (the nearest folder above with a ``.git``), or None."""
    folder = start.resolve()
    for candidate in (folder, *folder.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


def repository_of(path: Path) -> Path:
    """The repository of a contract or profile file, which bounds the files it may name: the git
    work tree holding it; without one, the working folder when it holds the file (a checkout without
    ``.git``, as the hooks search one), else the file's own folder. Resolved."""
    folder = path.resolve().parent
    root = repository_root(folder)
    if root is not None:
        return root
    cwd = Path.cwd().resolve()
    return cwd if folder.is_relative_to(cwd) else folder


def inside(path: Path, root: Path) -> bool:
    """Whether ``path``, its symlinks resolved, lies in ``root``; a name no file system holds
    (``usable_path``) never does."""
    if not usable_path(str(path)):
        return False
    try:
        return path.resolve().is_relative_to(root.resolve())
    except (OSError, ValueError, RuntimeError):  # RuntimeError: a symlink loop (Python < 3.13)
        return False


def node_source(node: NodeProto, root: Path | None) -> Source | None:
    """The source of ``node``, from the dynamo exporter's metadata or a TorchScript scope name;
    None when the model says nothing."""
    if not len(node.metadata_props):  # most nodes of a model not exported by torch: nothing but the name
        name = node.name
        if not name.startswith("/"):
            return None
        return Source(file=None, line=None, function=None, code=None, module_path=torchscript_module_path(name),
                      module_class=None, root_class=None)
    props = {p.key: p.value for p in node.metadata_props}
    frame = user_frame(props.get(STACK_TRACE, ""), root)
    file, line = (frame[0], frame[1]) if frame else (None, None)
    if file is not None and root is not None and not in_repository(file):
        # outside the repository: its name shortened, and no line, so that nothing (a report's
        # file:line, an annotation, a waiver's source) points there
        file, line = _shortened(file), None
    scopes = _quoted_list(props.get(NAME_SCOPES, ""))
    classes = _quoted_list(props.get(CLASS_HIERARCHY, ""))
    module_path: str | None = None
    module_class: str | None = None
    root_class: str | None = None
    if len(scopes) >= 2:  # ['', 'up', 'up.conv', 'conv2d_1']: the last one names the op itself
        module_path = scopes[-2]
        if len(classes) == len(scopes):
            module_class, root_class = classes[-2], classes[0]
    elif props.get(NAMESPACE):
        module_path, module_class, root_class = _from_namespace(props[NAMESPACE])
    elif node.name.startswith("/") and node.name.count("/") >= 1:
        module_path = torchscript_module_path(node.name)
    if frame is None and module_path is None:
        return None
    return Source(file=file, line=line,
                  function=frame[2][:_MAX_CODE] if frame else None, code=frame[3] if frame else None,
                  module_path=module_path, module_class=module_class, root_class=root_class)


def user_frame(stack_trace: str, root: Path | None) -> tuple[str, int, str, str] | None:
    """(file, line, function, code) of the innermost frame outside torch, npu_gate and installed
    packages; file relative to ``root`` when it lies under it (or when its tail names a file there:
    a model exported on another machine). A frame whose line number has more than
    ``MAX_LINE_DIGITS`` digits is dropped; a file name no file system holds is never looked up."""
    if not stack_trace or len(stack_trace) > _MAX_TEXT:
        return None
    frames = [m for m in _FRAME.finditer(stack_trace) if not _is_library(m.group("file"))]
    if not frames:
        return None
    last = frames[-1]
    code = last.group("code").strip()[:_MAX_CODE]
    return relative_file(last.group("file"), root), int(last.group("line")), last.group("function").strip(), code


def usable_path(file: str) -> bool:
    """Whether ``file`` can name a file here at all: no NUL byte, no name longer than NAME_MAX
    and no path longer than PATH_MAX (bytes, UTF-8). Others are never looked up (they raise)."""
    if "\0" in file or len(file.encode("utf-8", "surrogatepass")) > PATH_MAX:
        return False
    return all(len(part.encode("utf-8", "surrogatepass")) <= NAME_MAX for part in file.replace("\\", "/").split("/"))


def in_repository(file: str) -> bool:
    """Whether a source's ``file`` names a file of the repository, from its text alone: a usable
    relative path that never walks up (``..``), and holds no control character."""
    posix = file.replace("\\", "/")
    return (bool(file) and usable_path(file) and not posix.startswith("/") and not _DRIVE.match(posix)
            and ".." not in posix.split("/") and file.isprintable())


_DRIVE = re.compile(r"[A-Za-z]:")


def _shortened(file: str) -> str:
    return file if len(file) <= MAX_FILE else file[: MAX_FILE - 1] + "…"


def relative_file(file: str, root: Path | None) -> str:
    """``file`` relative to ``root`` (POSIX separators) when it is under it, or when a tail of
    its path names an existing file under ``root``; else as the model gives it."""
    if root is None or not usable_path(file):
        return file
    path = Path(file)
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except (ValueError, OSError):
        pass
    parts = [p for p in path.parts if p not in ("/", "\\")]
    if ".." in parts:
        return file
    for start in range(1, len(parts)):
        tail = Path(*parts[start:])
        try:
            if (root / tail).is_file():
                return tail.as_posix()
        except OSError:  # the whole path is too long under the root
            return file
    return file


def torchscript_module_path(name: str) -> str:
    """``/features/features.0/features.0.2/HardSwish`` -> ``features.0.2``; ``/up/conv/Conv`` ->
    ``up.conv``; ``/Relu`` -> ``""`` (the root module). Older exporters repeat the whole path at
    each level, newer ones give one attribute name per level."""
    scopes = [s for s in name.split("/")[1:-1] if s]
    if not scopes:
        return ""
    cumulative = all(b.startswith(a + ".") for a, b in itertools.pairwise(scopes))
    if cumulative and len(scopes) > 1:
        return scopes[-1]
    return ".".join(scopes)


def stable_keys(op_types: Sequence[str], module_paths: Sequence[str | None], names: Sequence[str]) -> list[str]:
    """One key per node (graph order): ``module_path/OpType#n`` where the module path is known,
    the node's name where it is not."""
    seen: dict[tuple[str, str], int] = {}
    keys = []
    for op_type, module_path, name in zip(op_types, module_paths, names, strict=True):
        if module_path is None:
            keys.append(name)
            continue
        n = seen.get((module_path, op_type), 0)
        seen[(module_path, op_type)] = n + 1
        keys.append(f"{module_path}/{op_type}#{n}")
    return keys


def short_class(qualified: str | None) -> str | None:
    return qualified.rsplit(".", 1)[-1] if qualified else None


def describe(source: Source | None) -> str | None:
    """``models/zoo.py:72 TinyUNet.up (Upsample)``, or as much of it as is known."""
    if source is None:
        return None
    parts = []
    if source["file"]:
        parts.append(place(source["file"], source["line"]))
    if source["module_path"]:
        owner = short_class(source["root_class"])
        path = ".".join(p for p in (owner, source["module_path"]) if p)
        cls = short_class(source["module_class"])
        parts.append(f"{path} ({cls})" if cls else path)
    elif source["module_path"] == "" and source["root_class"]:
        parts.append(short_class(source["root_class"]) or "")
    return " ".join(parts) or None


def place(file: str, line: int | None) -> str:
    """``models/zoo.py:72`` for a file of the repository; ``/etc/passwd (outside the repository)``
    for any other, never with a line."""
    if not in_repository(file):
        return f"{_shortened(file)} ({OUTSIDE})"
    return f"{file}:{line}" if line else file


def _is_library(file: str) -> bool:
    posix = file.replace("\\", "/")
    return (file.startswith("<") or any(part in posix for part in _LIBRARY_PARTS)
            or posix.startswith(_library_folders()))


@functools.cache
def _library_folders() -> tuple[str, ...]:
    """This machine's torch, npu_gate and standard-library folders (torch located, not imported)."""
    folders = [Path(__file__).resolve().parents[1], Path(sysconfig.get_paths()["stdlib"]).resolve()]
    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.origin:
        folders.append(Path(spec.origin).resolve().parent)
    return tuple(f.as_posix() + "/" for f in folders)


def _quoted_list(text: str) -> list[str]:
    if not text.startswith("[") or len(text) > _MAX_TEXT:
        return []
    return [m.group(1) for m in _QUOTED.finditer(text)]


def _from_namespace(text: str) -> tuple[str | None, str | None, str | None]:
    """``: models.zoo.Net/up: models.zoo.Up/up.conv: torch...Conv2d/conv2d_1: aten.conv2d.default``."""
    if len(text) > _MAX_TEXT:
        return None, None, None
    levels = [part.partition(": ") for part in text.split("/")]
    if len(levels) < 2:
        return None, None, None
    module = levels[-2]
    return module[0].strip(), module[2].strip() or None, levels[0][2].strip() or None

"""Helpers every command shares: could-not-run problems and their log, writing outputs, the
terminal summary and reports of one result."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from npu_gate.errors import GateError, one_line
from npu_gate.escape import visible
from npu_gate.files import write_atomic

if TYPE_CHECKING:  # annotations only: the commands import the pipeline lazily
    from npu_gate.profile.spec import Profile
    from npu_gate.result.types import GateResult


def print_problems(exc: GateError, args: argparse.Namespace) -> None:
    """One line per problem; the details behind them (a factory's traceback, what its module
    printed) go to `check --log PATH`, so the terminal stays one line per problem."""
    for problem in exc.problems:
        print(f"npu-gate: error: {visible(problem)}", file=sys.stderr)
    log = args.log if args.command == "check" else None
    if log and exc.details and write_log(log, "\n".join(exc.details) + "\n"):
        print(f"npu-gate: details in {log}", file=sys.stderr)


def write_log(path: str, text: str) -> bool:
    """Write a could-not-run log; False when it cannot be written (the error line still says why
    the gate stopped, which matters more than the log)."""
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        write_atomic(Path(path), text.encode("utf-8"))
    except OSError:
        return False
    return True


@contextlib.contextmanager
def writing(path: Path | str, what: str = "cannot write") -> Iterator[None]:
    """An OSError while the block writes ``path`` (disk full, no permission) becomes one line
    naming it, not an internal error."""
    try:
        yield
    except OSError as exc:
        raise GateError(f"{path}: {what}: {exc.strerror or one_line(exc)}") from None


def write_output(path: str, content: str) -> None:
    """Write an output file as a whole (``write_atomic``): a write that fails (disk full) is one
    line naming the file, and leaves the file that was there as it was."""
    target = Path(path)
    with writing(path):
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(target, content.encode("utf-8"))


def refuse_overwriting_inputs(inputs: Iterable[tuple[str, Path | str | None]],
                              outputs: Iterable[tuple[str, str | None]], *,
                              model: Path | None = None, bundle: str | None = None) -> None:
    """Refuse, before anything is written or any model runs, an output that is one of the run's
    inputs: ``inputs`` are (what it is, path), ``outputs`` (option, path); the external data
    files of ``model`` count too, and so does every input inside the ``bundle`` folder (--out),
    which publishing replaces; nor may two outputs be one file. Paths compare with symlinks
    resolved (and as the same file when both exist: hard links). One line per clash."""
    sources = [(what, Path(path)) for what, path in inputs if path]
    written = [(option, path) for option, path in outputs if path]
    if model is not None and any(_may_be_external_data(Path(p), model) for _, p in written):
        sources += [("external data of the model this run reads", model.resolve().parent / name)
                    for name in _external_data(model)]
    problems = []
    for option, path in written:
        for what, source in sources:
            if _same_file(Path(path), source):
                problems.append(f"{option} {path}: is {what} (refusing to overwrite an input)")
                break
    for i, (option, path) in enumerate(written):
        first = next((o for o, p in written[:i] if _same_file(Path(p), Path(path))), None)
        if first is not None:
            problems.append(f"{option} {path}: is also the {first} output (two outputs of one run "
                            "cannot be one file)")
    if bundle:
        folder = Path(bundle).resolve()
        for what, source in sources:
            if _inside(source, folder):
                problems.append(f"--out {bundle}: holds {what}, {source} (publishing the bundle would "
                                "replace it; refusing to overwrite an input)")
    if problems:
        raise GateError(*problems)


def profile_inputs(profile: Profile, what: str = "the profile this run reads",
                   base: str = "a base profile (extends) this run reads") -> list[tuple[str, str]]:
    """The files of ``profile`` as inputs of a run (``refuse_overwriting_inputs``): its own
    (``what``) and each one it ``extends`` (``base``); built-in profiles are none."""
    own = [(what, profile.origin)] if profile.origin != "builtin" else []
    return own + [(base, origin) for origin in profile.base_origins if origin != "builtin"]


def _same_file(a: Path, b: Path) -> bool:
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet)
        return False


def _inside(path: Path, folder: Path) -> bool:
    """Whether ``path`` (an existing file, symlinks resolved) is inside ``folder``."""
    return path.is_file() and Path(os.path.realpath(path)).is_relative_to(os.path.realpath(folder))


def _may_be_external_data(path: Path, model: Path) -> bool:
    """Whether the existing file ``path`` could be external data of ``model``: inside its folder,
    and its relative name written in the model file (a byte search, so that an output beside
    the model, the usual case, costs no onnx import on a cache hit)."""
    folder = Path(os.path.realpath(model)).parent
    if not _inside(path, folder) or not model.is_file():
        return False
    name = Path(os.path.realpath(path)).relative_to(folder).as_posix().encode()
    tail = b""
    try:
        with open(model, "rb") as f:
            while chunk := f.read(1 << 22):
                if name in tail + chunk:
                    return True
                tail = chunk[-len(name):]
    except OSError:
        return False
    return False


def _external_data(model: Path) -> list[str]:
    """The external data files of ``model`` (read only when an output lands in its folder:
    listing them imports onnx); none when the model cannot be read (its load says why)."""
    if not model.is_file():
        return []
    from npu_gate.graph.model_file import external_data_files

    try:
        return external_data_files(model)
    except Exception:  # not an ONNX file: the run's own load reports it
        return []


def emit(result: GateResult, args: argparse.Namespace, bundle: Path | None = None) -> None:
    from npu_gate.render import text

    if args.json:
        from npu_gate.render import json_

        write_output(args.json, json_.render(result))
    if args.markdown:
        from npu_gate.render import markdown

        write_output(args.markdown, markdown.render(result, bundle_dir(bundle, args.markdown)))
    if getattr(args, "html", None):
        write_html(args.html, result)
    if not args.quiet:
        sys.stdout.write(text.render(result))


def write_html(path: str, result: GateResult) -> None:
    """``--html PATH``: the report as one self-contained page (render.html)."""
    from npu_gate.render import html

    write_output(path, html.render(result))


def bundle_dir(bundle: Path | None, report: str) -> str:
    """The bundle folder relative to the folder of the Markdown report at ``report`` (POSIX,
    "" when they are the same): links into the bundle resolve from the report."""
    if bundle is None:
        return ""
    relative = Path(os.path.relpath(bundle.resolve(), Path(report).resolve().parent)).as_posix()
    return "" if relative == "." else relative


def warn_device_timings(doc: dict[str, Any] | None, name: str) -> None:
    from npu_gate.contract.device_timings import unmatched_warnings

    for line in unmatched_warnings(doc, name):
        print(f"npu-gate: warning: {visible(line)}", file=sys.stderr)

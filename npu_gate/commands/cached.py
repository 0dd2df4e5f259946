"""The result cache for `npu-gate check` and `npu-gate check-onnx`: answer a gate from it, or run
the gate and store the result."""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from npu_gate.commands.common import warn_device_timings, write_html, write_output
from npu_gate.errors import EXIT_FAIL, EXIT_PASS

if TYPE_CHECKING:  # annotations only: the commands import the pipeline lazily
    from npu_gate.cache import Dependency, Entry
    from npu_gate.contract.spec import Contract
    from npu_gate.result.types import GateResult


def load_contract_file(path: Path, *, cheap: bool) -> Contract:
    """A contract named on the command line; ``cheap`` skips the onnx-based profile lint (a cache
    lookup needs no onnx), and a contract with problems is then checked in full to list them all."""
    from npu_gate.contract.spec import load_contract
    from npu_gate.errors import ContractError

    try:
        return load_contract(path, check_onnx=not cheap)
    except ContractError:
        if cheap:
            load_contract(path)  # the full check: every problem in one go
        raise


def check_cached(contract: Contract, args: argparse.Namespace, known_key: str | None = None) -> int:
    """Gate one contract, answering from the result cache when its key is unchanged.
    ``known_key``: the key ``load_misses`` computed (None: compute it)."""
    from npu_gate import cache

    def key() -> str:
        return known_key or cache.contract_key(contract, _today(args), exclude=_outputs(args))

    def run() -> tuple[GateResult, list[Dependency] | None]:
        from npu_gate.contract.spec import load_contract
        from npu_gate.pipeline import check_contract

        # A lookup's contract skipped the onnx-based profile lint and the files' contents.
        full = contract if contract.complete else load_contract(contract.path)
        result = check_contract(full, today=args.today, time_limit=args.timeout)
        deps = cache.onnx_dependencies(contract.onnx_path) if contract.onnx_path else []
        code = cache.code_dependencies(result.code_files)
        if deps is None or code is None:
            return result, None
        return result, deps + code

    return cached(args, str(contract.path), key, run)


def load_misses(contracts: list[Contract], args: argparse.Namespace) -> list[tuple[Contract, str | None]]:
    """Several contracts: each the cache has no result for is loaded in full now (the profile's
    onnx-based lint, the samples file's arrays, the replacement model's inputs), so that a
    problem in any of them stops the run before any model runs or any verdict is printed. A
    contract the cache answers was valid when its result was stored: its key covers the
    contract, the profile and every file they name. Each comes with its key (None: not
    cacheable), computed once."""
    from npu_gate import cache
    from npu_gate.contract.spec import load_contract
    from npu_gate.errors import ContractError, GateError

    store = cache.Store(cache.resolve_dir(args.cache_dir))
    loaded: list[tuple[Contract, str | None]] = []
    problems: list[str] = []
    for contract in contracts:
        key = None
        with contextlib.suppress(cache.NotCacheable, OSError):  # said by check_cached, which tries again
            key = cache.contract_key(contract, _today(args), exclude=_outputs(args))
        if key is not None and not args.no_cache and store.path(key).is_file():
            loaded.append((contract, key))
            continue
        try:
            loaded.append((load_contract(contract.path), key))
        except ContractError as exc:
            problems.extend(exc.problems)
    if problems:
        raise GateError(*problems)
    return loaded


def _today(args: argparse.Namespace) -> dt.date:
    return args.today or dt.date.today()


def _outputs(args: argparse.Namespace) -> list[Path]:
    return [Path(p) for p in (args.json, args.markdown, getattr(args, "html", None), args.log) if p]


def cached(args: argparse.Namespace, label: str, key_fn: Callable[[], str],
           run: Callable[[], tuple[GateResult, list[Dependency] | None]]) -> int:
    """Answer from the cache, or ``run()`` the gate (result, external files read) and store."""
    from npu_gate import cache

    # --no-cache skips the lookup only: the fresh result replaces whatever was stored.
    store = cache.Store(cache.resolve_dir(args.cache_dir))
    key = None
    uncached = None  # said once the run has a result: a run that cannot start says only why
    try:
        key = key_fn()
    except cache.NotCacheable as exc:
        uncached = str(exc)
    except OSError as exc:  # an unreadable file in a torch contract's folder, say
        uncached = f"cannot read {exc.filename}: {exc.strerror}"
    if key is not None and not args.no_cache:
        entry = store.get(key)
        refused = cache.replay_problem(entry) if entry is not None else None
        if entry is not None and refused is None:
            _emit_cached(entry, args)
            return entry.exit_code
        if refused is not None:  # never replayed: the run below replaces it
            print(f"npu-gate: note: {label}: cache entry {key[:12]} refused: {refused}; gating afresh",
                  file=sys.stderr)
    from npu_gate.stages.timeout import timed_out

    result, deps = run()
    if deps is None and uncached is None and key is not None:
        uncached = "the files this run read could not all be recorded"
    if timed_out(result):  # not what the gate says of these inputs: what it got to in the time given
        uncached = "the run reached its time limit (--timeout)"
    json_text, markdown_text, terminal = _render_all(result)
    _emit_texts(args, json_text, markdown_text, terminal, result.log)
    warn_device_timings(result.device_timings, result.name)
    if uncached is not None:
        print(f"npu-gate: note: {label}: not cached: {uncached}", file=sys.stderr)
    code = EXIT_PASS if result.passed else EXIT_FAIL
    if key is not None and deps is not None and not timed_out(result):
        store.put(cache.new_entry(key, code, json_text, markdown_text, terminal, result.log, deps))
    return code


def _render_all(result: GateResult) -> tuple[str, str, str]:
    from npu_gate.render import json_, markdown, text

    return json_.render(result), markdown.render(result), text.render(result)


def _emit_texts(args: argparse.Namespace, json_text: str, markdown_text: str, terminal: str,
                log: list[str]) -> None:
    if args.json:
        write_output(args.json, json_text)
    if args.markdown:
        write_output(args.markdown, markdown_text)
    if getattr(args, "html", None):  # from the JSON text: a cache hit has no result object
        from npu_gate.result.read import result_from_dict

        write_html(args.html, result_from_dict(json.loads(json_text)))
    if args.log:
        write_output(args.log, "\n".join(log) + ("\n" if log else ""))
    if not args.quiet:
        sys.stdout.write(terminal)


def _emit_cached(entry: Entry, args: argparse.Namespace) -> None:
    """The stored outputs, each saying that it came from the cache."""
    note = f"result from cache (key {entry.key[:12]}, computed {entry.created})"
    doc = json.loads(entry.json)
    doc["cache"] = {"hit": True, "key": entry.key, "created": entry.created}
    json_text = json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    markdown_text = (f"{entry.markdown}\n_{note[0].upper()}{note[1:]}; "
                     "`npu-gate check --no-cache` recomputes it._\n")
    _emit_texts(args, json_text, markdown_text, f"{entry.text}  {note}\n", entry.log)
    warn_device_timings(doc.get("device_timings"), doc["name"])

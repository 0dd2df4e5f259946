"""Command line: parses arguments, calls the pipeline, writes what renderers return.

Exit codes: 0 the gate passed, 1 the gate failed, 2 the gate could not run.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from npu_gate import __version__
from npu_gate.errors import EXIT_ERROR, EXIT_FAIL, EXIT_PASS, GateError

DEFAULT_INSPECT_PROFILE = "demo"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="npu-gate",
        description="Gate a PyTorch/ONNX model against an NPU target profile.",
        epilog="Exit codes: 0 pass, 1 gate failed, 2 could not run.",
    )
    parser.add_argument("--version", action="version", version=f"npu-gate {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    check = sub.add_parser("check", help="gate one or more contracts (default: ./npu-gate.json)")
    check.add_argument("contracts", nargs="*", metavar="PATH",
                       help="contract file, or a folder holding npu-gate.json")
    _add_outputs(check)
    check.add_argument("--log", metavar="PATH", help="write the conversion log (exporter output)")
    check.add_argument("--today", metavar="YYYY-MM-DD", type=_date,
                       help="date used to expire waivers (default: today)")
    _add_cache(check)

    inspect = sub.add_parser("inspect", help="analyse an ONNX file without a contract")
    inspect.add_argument("model", metavar="MODEL.onnx")
    inspect.add_argument("--profile", default=DEFAULT_INSPECT_PROFILE,
                         help=f"built-in profile name or profile file (default: {DEFAULT_INSPECT_PROFILE})")
    _add_outputs(inspect)

    validate = sub.add_parser(
        "validate", help="validate contract and profile files against the schemas (exit 0 or 2)")
    validate.add_argument("files", nargs="+", metavar="FILE",
                          help="a contract (npu-gate.json, npu-gate.*.json) or a profile "
                               "(*.npu-profile.json)")
    validate.add_argument("-q", "--quiet", action="store_true", help="print problems only")

    check_onnx = sub.add_parser(
        "check-onnx", help="gate ONNX files with the contracts that name them (pre-commit hook)")
    check_onnx.add_argument("files", nargs="+", metavar="MODEL.onnx")
    check_onnx.add_argument("--profile", help="gate files no contract names with this profile "
                            "(default: skip them)")
    check_onnx.add_argument("-q", "--quiet", action="store_true", help="no terminal summary")
    check_onnx.set_defaults(json=None, markdown=None, log=None, today=None)  # as `check` has
    _add_cache(check_onnx)

    rules = sub.add_parser("rules", help="list rule ids with one-line docs")
    rules.add_argument("--format", choices=["text", "json"], default="text")
    sub.add_parser("profiles", help="list built-in target profiles")
    explain = sub.add_parser("explain", help="show the documentation of a rule id")
    explain.add_argument("id")
    return parser


def _add_outputs(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", metavar="PATH", help="write the JSON result")
    p.add_argument("--markdown", metavar="PATH", help="write the Markdown report")
    p.add_argument("-q", "--quiet", action="store_true", help="no terminal summary")


def _add_cache(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-cache", action="store_true",
                   help="ignore cached results and run the gate afresh (the new result is stored)")
    p.add_argument("--cache-dir", metavar="DIR",
                   help="result cache folder (default: $NPU_GATE_CACHE_DIR, else "
                        "$XDG_CACHE_HOME/npu-gate or ~/.cache/npu-gate)")


def _date(text: str) -> dt.date:
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a YYYY-MM-DD date") from None


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "check":
            return _check(args)
        if args.command == "inspect":
            return _inspect(args)
        if args.command == "rules":
            return _rules(args)
        if args.command == "profiles":
            return _profiles()
        if args.command == "explain":
            return _explain(args)
        if args.command == "validate":
            return _validate(args)
        if args.command == "check-onnx":
            return _check_onnx(args)
    except GateError as exc:
        for problem in exc.problems:
            print(f"npu-gate: error: {problem}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return EXIT_ERROR
    except Exception as exc:
        if args.debug:
            raise
        print(f"npu-gate: internal error: {type(exc).__name__}: {exc} (rerun with --debug for the "
              "traceback)", file=sys.stderr)
        return EXIT_ERROR
    return EXIT_ERROR


def _check(args: argparse.Namespace) -> int:
    # Keep this path free of onnx/numpy/torch until a cache miss: a hit must stay cheap.
    from npu_gate.contract import find_contract, load_contract

    paths = [find_contract(p) for p in (args.contracts or [None])]
    if len(paths) > 1 and (args.json or args.markdown or args.log):
        raise GateError("--json, --markdown and --log take one contract; run one check per contract")
    contracts = [load_contract(p) for p in paths]  # every contract is valid before any model runs
    worst = EXIT_PASS
    for contract in contracts:
        worst = max(worst, _check_cached(contract, args))
    return worst


def _inspect(args: argparse.Namespace) -> int:
    from npu_gate.pipeline import inspect_model
    from npu_gate.profile import load_profile

    profile = load_profile(args.profile, Path.cwd(), where="--profile")
    result = inspect_model(Path(args.model), profile)
    _emit(result, args)
    return EXIT_PASS if result.passed else EXIT_FAIL


def _emit(result: object, args: argparse.Namespace) -> None:
    from npu_gate.render import json_, markdown, text

    if args.json:
        _write(args.json, json_.render(result))  # type: ignore[arg-type]
    if args.markdown:
        _write(args.markdown, markdown.render(result))  # type: ignore[arg-type]
    if not args.quiet:
        sys.stdout.write(text.render(result))  # type: ignore[arg-type]


def _write(path: str, content: str) -> None:
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
    except OSError as exc:
        raise GateError(f"{path}: cannot write: {exc.strerror}") from None


def _rules(args: argparse.Namespace) -> int:
    from npu_gate.rules import RULES

    if args.format == "json":
        doc = [{"id": r.id, "severity": r.severity, "finding": r.finding, "summary": r.summary,
                "doc": r.doc} for r in RULES.values()]
        print(json.dumps(doc, indent=2))
        return EXIT_PASS
    width = max(len(r.id) for r in RULES.values())
    for r in RULES.values():
        severity = r.severity if r.finding else "exit 2"
        print(f"{r.id:<{width}}  {severity:<7}  {r.summary}")
    return EXIT_PASS


def _profiles() -> int:
    from npu_gate.profile import load_profile
    from npu_gate.resources import builtin_profile_names

    for name in builtin_profile_names():
        p = load_profile(name)
        print(f"{p.name:<16} {p.evidence:<22} {len(p.ops):>3} ops  {p.description}")
    return EXIT_PASS


def _explain(args: argparse.Namespace) -> int:
    from npu_gate.rules import RETIRED, RULES

    r = RULES.get(args.id)
    if r is None:
        if args.id in RETIRED:
            raise GateError(f"{args.id}: retired in {RETIRED[args.id]}")
        raise GateError(f"{args.id}: unknown rule id (see `npu-gate rules`)")
    print(f"{r.id} ({r.severity if r.finding else 'stops the run, exit 2'})\n\n{r.summary}\n\n{r.doc}")
    return EXIT_PASS


# --- result cache, validate, check-onnx ---------------------------------------------------

def _check_cached(contract: Any, args: argparse.Namespace) -> int:
    """Gate one contract, answering from the result cache when its key is unchanged."""
    from npu_gate import cache

    today = args.today or dt.date.today()
    outputs = [Path(p) for p in (args.json, args.markdown, args.log) if p]

    def key() -> str:
        return cache.contract_key(contract, today, exclude=outputs)

    def run() -> tuple[Any, list[Any] | None]:
        from npu_gate.pipeline import check_contract

        result = check_contract(contract, today=args.today)
        deps = cache.onnx_dependencies(contract.onnx_path) if contract.onnx_path else []
        return result, deps

    return _cached(args, str(contract.path), key, run)


def _cached(args: argparse.Namespace, label: str, key_fn: Callable[[], str],
            run: Callable[[], tuple[Any, list[Any] | None]]) -> int:
    """Answer from the cache, or ``run()`` the gate (result, external files read) and store."""
    from npu_gate import cache

    # --no-cache skips the lookup only: the fresh result replaces whatever was stored.
    store = cache.Store(cache.resolve_dir(args.cache_dir))
    key = None
    try:
        key = key_fn()
    except cache.NotCacheable as exc:
        print(f"npu-gate: note: {label}: not cached: {exc}", file=sys.stderr)
    except OSError as exc:  # an unreadable file in a torch contract's folder, say
        print(f"npu-gate: note: {label}: not cached: cannot read {exc.filename}: {exc.strerror}",
              file=sys.stderr)
    if key is not None and not args.no_cache:
        entry = store.get(key)
        if entry is not None:
            _emit_cached(entry, args)
            return entry.exit_code
    result, deps = run()
    json_text, markdown_text, terminal = _render_all(result)
    _emit_texts(args, json_text, markdown_text, terminal, result.log)
    code = EXIT_PASS if result.passed else EXIT_FAIL
    if key is not None and deps is not None:
        store.put(cache.new_entry(key, code, json_text, markdown_text, terminal, result.log, deps))
    return code


def _render_all(result: Any) -> tuple[str, str, str]:
    from npu_gate.render import json_, markdown, text

    return json_.render(result), markdown.render(result), text.render(result)


def _emit_texts(args: argparse.Namespace, json_text: str, markdown_text: str, terminal: str,
                log: list[str]) -> None:
    if args.json:
        _write(args.json, json_text)
    if args.markdown:
        _write(args.markdown, markdown_text)
    if args.log:
        _write(args.log, "\n".join(log) + ("\n" if log else ""))
    if not args.quiet:
        sys.stdout.write(terminal)


def _emit_cached(entry: Any, args: argparse.Namespace) -> None:
    """The stored outputs, each saying that it came from the cache."""
    note = f"result from cache (key {entry.key[:12]}, computed {entry.created})"
    doc = json.loads(entry.json)
    doc["cache"] = {"hit": True, "key": entry.key, "created": entry.created}
    json_text = json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    markdown_text = (f"{entry.markdown}\n_{note[0].upper()}{note[1:]}; "
                     "`npu-gate check --no-cache` recomputes it._\n")
    _emit_texts(args, json_text, markdown_text, f"{entry.text}  {note}\n", entry.log)


def _validate(args: argparse.Namespace) -> int:
    """Contract or profile files against the schemas (and what schemas cannot say).

    Exit 2 when any file is invalid: the same "could not run" a `check` gives for it.
    """
    from npu_gate.contract import load_contract
    from npu_gate.profile import load_profile
    from npu_gate.validation import read_document

    problems: list[str] = []
    for name in args.files:
        path = Path(name)
        kind = "contract"
        if name.endswith(".npu-profile.json"):
            kind = "profile"
        elif not Path(name).name.startswith("npu-gate"):
            try:  # any other name: a profile has ops and no model
                doc = read_document(path, name)
                if isinstance(doc, dict) and "ops" in doc and "model" not in doc:
                    kind = "profile"
            except ValueError:
                pass
        try:
            if kind == "profile":
                load_profile(str(path) if path.suffix else f"./{path}", where=name)
            else:
                load_contract(path)
        except GateError as exc:
            problems.extend(exc.problems)
            continue
        if not args.quiet:
            print(f"{name}: valid {kind}")
    for problem in problems:
        print(f"npu-gate: error: {problem}", file=sys.stderr)
    return EXIT_ERROR if problems else EXIT_PASS


def _check_onnx(args: argparse.Namespace) -> int:
    """Gate ONNX files: with every contract that names one, else with --profile, else skip."""
    from npu_gate.contract import load_contract

    profile = None
    if args.profile:
        from npu_gate.profile import load_profile

        profile = load_profile(args.profile, Path.cwd(), where="--profile")
    worst = EXIT_PASS
    seen: set[Path] = set()
    for name in args.files:
        model = Path(name)
        if not model.is_file():
            raise GateError(f"{name}: file not found")
        contracts = [c for c in contracts_naming(model) if c not in seen]
        seen.update(contracts)
        if contracts:
            for path in contracts:
                worst = max(worst, _check_cached(load_contract(path), args))
        elif profile is not None:
            worst = max(worst, _inspect_cached(model, profile, args))
        elif not args.quiet:
            print(f"npu-gate: {name}: skipped: no npu-gate contract names it "
                  "(pass --profile to gate it anyway)")
    return worst


def _inspect_cached(model: Path, profile: Any, args: argparse.Namespace) -> int:
    from npu_gate import cache

    def run() -> tuple[Any, list[Any] | None]:
        from npu_gate.pipeline import inspect_model

        return inspect_model(model, profile), cache.onnx_dependencies(model)

    return _cached(args, str(model), lambda: cache.inspect_key(model, profile), run)


def contracts_naming(model: Path) -> list[Path]:
    """Contracts (npu-gate.json, npu-gate.*.json, YAML too) in the model's folder or any
    folder above it up to the working directory whose ``model.onnx`` is this file."""
    from npu_gate.validation import read_document

    target = model.resolve()
    cwd = Path.cwd().resolve()
    folders = [target.parent]
    if target.is_relative_to(cwd):
        folders += [p for p in target.parent.parents if p.is_relative_to(cwd)]
    found = []
    for folder in folders:
        for path in sorted(folder.glob("npu-gate*")):
            if not re.fullmatch(r"npu-gate(\.[^/]+)?\.(json|ya?ml)", path.name):
                continue
            try:
                doc = read_document(path, str(path))
                ref = doc["model"]["onnx"]
            except (ValueError, KeyError, TypeError):
                continue  # not a contract of an ONNX file, or broken: npu-gate-contract says why
            if isinstance(ref, str) and (folder / ref).resolve() == target:
                found.append(path)
    return found

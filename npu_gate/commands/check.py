"""`npu-gate check`: gate one or more contracts (from the cache, with a bundle, or against a
baseline)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from npu_gate.commands.cached import check_cached, load_contract_file, load_misses
from npu_gate.commands.common import (
    bundle_dir,
    emit,
    print_problems,
    profile_inputs,
    refuse_overwriting_inputs,
    warn_device_timings,
    write_html,
    write_output,
    writing,
)
from npu_gate.errors import EXIT_ERROR, EXIT_FAIL, EXIT_PASS, GateError

if TYPE_CHECKING:  # annotations only: the commands import the pipeline lazily
    from npu_gate.contract.spec import Contract
    from npu_gate.result.types import GateResult


def run(args: argparse.Namespace) -> int:
    # Keep this path free of onnx/numpy/torch until a cache miss: a hit must stay cheap.
    from npu_gate.contract.spec import find_contract

    paths = [find_contract(p) for p in (args.contracts or [None])]
    if len(paths) > 1 and (args.json or args.markdown or args.html or args.log or args.out):
        raise GateError("--json, --markdown, --html, --log and --out take one contract; run one check per "
                        "contract (or use --bundle)")
    # Every contract is valid before any model runs. A plain gate may be answered from the
    # cache: its lookup skips the onnx-based profile lint and reading the named files (samples,
    # replacement model), which a miss then does in full.
    cacheable = not _uncached_run(args)
    contracts = _load_all(paths, cheap=cacheable)
    _require_torch(contracts)
    baseline = _baseline(args)
    if baseline is not None:
        _refuse_shared_names(contracts)
    if args.device_timings:
        import dataclasses

        timings = Path(args.device_timings)
        if not timings.is_file():
            raise GateError(f"--device-timings: file {args.device_timings!r} not found")
        contracts = [dataclasses.replace(c, device_timings=timings) for c in contracts]
    _refuse_overwriting_inputs(contracts, args)
    if args.out or args.bundle:
        _check_bundle_folders(contracts, args)
    missing: list[str] = []
    if baseline is not None:
        from npu_gate.compare.baseline import absent

        missing = absent([c.name for c in contracts], baseline)
    # Several contracts loaded for a cache lookup: those the cache has no result for are loaded
    # in full now (the profile lint, the files' contents), before the first model runs.
    keyed: list[tuple[Contract, str | None]] = (load_misses(contracts, args) if cacheable and len(contracts) > 1
                                                else [(c, None) for c in contracts])
    worst = EXIT_PASS
    codes = []
    for contract, key in keyed:
        try:
            if not cacheable:
                code = _check_uncached(contract, args, baseline, missing)
            else:
                code = check_cached(contract, args, key)
        except GateError as exc:
            if len(contracts) == 1:
                raise
            # One model that cannot be read must not hide the others' verdicts.
            print_problems(exc, args)
            code = EXIT_ERROR
        worst = max(worst, code)
        codes.append(code)
    if missing and not args.quiet:
        from npu_gate.render.text import absent_line
        sys.stdout.write(absent_line(missing))
    if len(codes) > 1 and not args.quiet:
        print(count_line(codes))
    return worst


def count_line(codes: list[int]) -> str:
    """``npu-gate: 3 models: 1 passed, 2 failed`` (and how many could not run), by exit code."""
    line = (f"npu-gate: {len(codes)} models: {codes.count(EXIT_PASS)} passed, "
            f"{codes.count(EXIT_FAIL)} failed")
    errors = codes.count(EXIT_ERROR)
    return line + (f", {errors} could not run" if errors else "")


def _load_all(paths: list[Path], *, cheap: bool) -> list[Contract]:
    """Every contract; when one has a problem, every problem of every contract (each then
    checked in full, with what the load for a cache lookup skips), before any model runs."""
    from npu_gate.contract.spec import load_contract

    try:
        return [load_contract_file(p, cheap=cheap) for p in paths]
    except GateError:
        if len(paths) == 1:
            raise
    problems = []
    for p in paths:
        try:
            load_contract(p)
        except GateError as exc:
            problems.extend(exc.problems)
    raise GateError(*problems)


def _refuse_shared_names(contracts: list[Contract]) -> None:
    """The baseline matches models by name: two contracts of one name would both be compared
    with its one result of that name (a new model's errors then read as no regression)."""
    first: dict[str, Contract] = {}
    problems = []
    for c in contracts:
        other = first.setdefault(c.name, c)
        if Path(other.path).resolve() != Path(c.path).resolve():
            problems.append(f"{c.path}: name {c.name!r} is also {other.path}'s: give one of the contracts "
                            "another \"name\" (--baseline matches models by name)")
    if problems:
        raise GateError(*problems)


def _require_torch(contracts: list[Contract]) -> None:
    """Without PyTorch (the ONNX-only install), a contract with a torch model could not run:
    say so for each one before any model runs, as for any other contract that cannot run."""
    import importlib.util

    if importlib.util.find_spec("torch") is not None:
        return
    problems = []
    for c in contracts:
        if c.torch is not None:
            problems.append(f"{c.path}: model.torch needs PyTorch: pip install 'npu-gate[torch]'")
        if c.replacement is not None and c.replacement.torch is not None:
            problems.append(f"{c.path}: replacement.torch needs PyTorch: pip install 'npu-gate[torch]'")
    if problems:
        raise GateError(*problems)


def _refuse_overwriting_inputs(contracts: list[Contract], args: argparse.Namespace) -> None:
    """No output (--json, --markdown, --log, the bundle folder) may be a file the run reads."""
    problems: list[str] = []
    for c in contracts:
        inputs = [("the contract this run reads", c.path), ("the model this run reads", c.onnx_path),
                  *profile_inputs(c.profile),
                  ("the samples file this run reads", c.numerics.samples_file),
                  ("the device timings this run reads", c.device_timings),
                  ("the replacement model this run reads", c.replacement.onnx_path if c.replacement else None),
                  ("the baseline this run reads", args.baseline)]
        outputs = [("--json", args.json), ("--markdown", args.markdown), ("--html", args.html), ("--log", args.log)]
        folder = args.out
        if args.bundle:
            from npu_gate.evidence.bundle import default_folder

            folder = str(default_folder(c))
        try:
            refuse_overwriting_inputs(inputs, outputs, model=c.onnx_path, bundle=folder)
        except GateError as exc:
            problems.extend(p for p in exc.problems if p not in problems)
    if problems:
        raise GateError(*problems)


def _uncached_run(args: argparse.Namespace) -> bool:
    """Bundle, ratchet and device-timing runs always run the whole gate."""
    return bool(args.out or args.bundle or args.baseline or args.fail_on != "errors"
                or args.device_timings)


def _check_uncached(contract: Contract, args: argparse.Namespace, baseline: list[dict[str, Any]] | None,
                   missing: list[str]) -> int:
    """Bundle and ratchet runs: always the whole gate (they need the live artifacts)."""
    from npu_gate.pipeline import check_contract

    folder: Path | None = None
    if args.out or args.bundle:
        result, folder = _check_bundle(contract, args)
    else:
        result = check_contract(contract, today=args.today, time_limit=args.timeout)
    warn_device_timings(result.device_timings, result.name)
    if args.log:
        write_output(args.log, "\n".join(result.log) + ("\n" if result.log else ""))
    if args.baseline or args.fail_on != "errors":
        return _emit_ratchet(result, str(contract.path), baseline, args, bundle=folder, missing=missing)
    emit(result, args, bundle=folder)
    return EXIT_PASS if result.passed else EXIT_FAIL


def _check_bundle_folders(contracts: list[Contract], args: argparse.Namespace) -> None:
    """Every bundle folder is usable and each contract has its own, before any model runs."""
    from npu_gate.evidence import bundle

    folders: dict[Path, Contract] = {}
    problems = []
    for contract in contracts:
        folder = Path(args.out) if args.out else bundle.default_folder(contract)
        # "Model" and "model" are one folder on macOS and Windows file systems
        other = folders.setdefault(Path(str(folder.resolve()).casefold()), contract)
        if other is not contract:
            problems.append(f"{contract.path}: its bundle folder {folder} is also {other.path}'s; "
                            "give one of the contracts another \"name\"")
            continue
        try:
            bundle.check_target(folder)
        except GateError as exc:
            problems.extend(exc.problems)
    if problems:
        raise GateError(*problems)


def _check_bundle(contract: Contract, args: argparse.Namespace) -> tuple[GateResult, Path]:
    """check_contract, then the evidence bundle (--out DIR or npu-gate-out/<name>/); the
    result and the bundle's folder."""
    from npu_gate.evidence import bundle
    from npu_gate.pipeline import Artifacts, check_contract

    folder = Path(args.out) if args.out else bundle.default_folder(contract)
    with bundle.staged(folder) as stage:
        art = Artifacts(stage)
        result = check_contract(contract, today=args.today, keep=art, time_limit=args.timeout)
        with writing(folder, "cannot write the evidence bundle"):
            bundle.write(stage, contract, result, art)
    if not args.quiet:
        print(f"evidence bundle: {folder}")
    return result, folder


def _baseline(args: argparse.Namespace) -> list[dict[str, Any]] | None:
    from npu_gate.result.read import load_results

    if args.fail_on == "regressions" and not args.baseline:
        raise GateError("--fail-on regressions needs --baseline FILE")
    return load_results(Path(args.baseline)) if args.baseline else None


def _emit_ratchet(result: GateResult, label: str, baseline: list[dict[str, Any]] | None,
                  args: argparse.Namespace, bundle: Path | None = None, missing: Sequence[str] = ()) -> int:
    """`check` with --baseline / --fail-on: the report gains the baseline section (and names
    the baseline's ``missing`` models; the terminal line for them comes after all contracts)."""
    from npu_gate.compare.baseline import compare_all
    from npu_gate.compare.report import ModelReport, should_fail
    from npu_gate.render import json_
    from npu_gate.render.report import render_report
    from npu_gate.render.text import text_lines
    model = ModelReport(label, result=result)
    if args.markdown:
        model.bundle_dir = bundle_dir(bundle, args.markdown)
    if baseline is not None:
        model.comparison = compare_all([result.to_dict()], baseline)[0]
    failed = should_fail([model], args.fail_on)
    if args.json:
        write_output(args.json, json_.render(result))
    if args.markdown:
        write_output(args.markdown, render_report([model], failed=failed, fail_on=args.fail_on, missing=missing))
    if args.html:
        write_html(args.html, result)
    if not args.quiet:
        sys.stdout.write(text_lines([model], args.fail_on))
    return EXIT_FAIL if failed else EXIT_PASS

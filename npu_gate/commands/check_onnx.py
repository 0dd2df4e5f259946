"""`npu-gate check-onnx`: gate ONNX files with the contracts that name them (the pre-commit hook)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import TYPE_CHECKING

from npu_gate.commands.cached import cached, check_cached, load_contract_file
from npu_gate.errors import EXIT_PASS, GateError

if TYPE_CHECKING:  # annotations only: the commands import the pipeline lazily
    from npu_gate.cache import Dependency
    from npu_gate.result.types import GateResult
    from npu_gate.target.profile import Profile


def run(args: argparse.Namespace) -> int:
    """Gate ONNX files: with every contract that names one, else with --profile, else skip.

    Like `check`, contracts and --profile load without the onnx-based profile lint, so a
    cache hit imports no onnx or numpy; a miss reloads them with the full check."""
    profile = None
    if args.profile:
        profile = _load_profile_option(args.profile, cheap=True)
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
                worst = max(worst, check_cached(load_contract_file(path, cheap=True), args))
        elif profile is not None:
            worst = max(worst, _inspect_cached(model, profile, args))
        elif not args.quiet:
            print(f"npu-gate: {name}: skipped: no npu-gate contract names it "
                  "(pass --profile to gate it anyway)")
    return worst


def _load_profile_option(ref: str, *, cheap: bool) -> Profile:
    from npu_gate.errors import ProfileError
    from npu_gate.target.profile import load_profile

    try:
        return load_profile(ref, Path.cwd(), where="--profile", check_onnx=not cheap)
    except ProfileError:
        if cheap:
            load_profile(ref, Path.cwd(), where="--profile")  # the full check: every problem
        raise


def _inspect_cached(model: Path, profile: Profile, args: argparse.Namespace) -> int:
    from npu_gate import cache

    def run() -> tuple[GateResult, list[Dependency] | None]:
        from npu_gate.pipeline import inspect_model

        full = _load_profile_option(args.profile, cheap=False)  # the lint the lookup skipped
        return inspect_model(model, full, time_limit=args.timeout), cache.onnx_dependencies(model)

    return cached(args, str(model), lambda: cache.inspect_key(model, profile), run)


def contracts_naming(model: Path) -> list[Path]:
    """Contracts (npu-gate.json, npu-gate.*.json, YAML too) in the model's folder or any
    folder above it up to the working directory whose ``model.onnx`` is this file."""
    import importlib.util

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
            except (ValueError, KeyError, TypeError) as exc:
                # Without PyYAML whether a YAML contract names this model is unknown: skipping it
                # would pass a model its contract may fail.
                if (isinstance(exc, ValueError) and path.suffix.lower() in (".yaml", ".yml")
                        and importlib.util.find_spec("yaml") is None):
                    raise GateError(str(exc)) from None
                continue  # not a contract of an ONNX file, or broken: npu-gate-contract says why
            if isinstance(ref, str) and (folder / ref).resolve() == target:
                found.append(path)
    return found

"""`npu-gate check-onnx`: gate ONNX files with the contracts that name them (the pre-commit hook)."""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from npu_gate.commands.cached import cached, check_cached, load_contract_file
from npu_gate.errors import EXIT_FAIL, EXIT_PASS, GateError

if TYPE_CHECKING:  # annotations only: the commands import the pipeline lazily
    from npu_gate.cache import Dependency
    from npu_gate.profile.spec import Profile
    from npu_gate.result.types import GateResult


def run(args: argparse.Namespace) -> int:
    """Gate ONNX files: with every contract that names one, else with --profile, else warn
    (or, with --require-contract, fail): a changed model is never passed silently.

    Like `check`, contracts and --profile load without the onnx-based profile lint, so a
    cache hit imports no onnx or numpy; a miss reloads them with the full check."""
    profile = None
    if args.profile:
        profile = _load_profile_option(args.profile, cheap=True)
    models = []
    for name in args.files:
        model = Path(name)
        if not model.is_file():
            raise GateError(f"{name}: file not found")
        models.append(model)
    covering = contracts_covering(models, args.contracts or [])
    worst = EXIT_PASS
    seen: set[Path] = set()
    for name, model in zip(args.files, models, strict=True):
        found = covering[model.resolve()]
        contracts = [c for c in found if c not in seen]
        seen.update(contracts)
        if found:
            for path in contracts:
                worst = max(worst, check_cached(load_contract_file(path, cheap=True), args))
        elif profile is not None:
            worst = max(worst, _inspect_cached(model, profile, args))
        elif args.require_contract:
            print(f"npu-gate: error: {name}: {UNCOVERED}", file=sys.stderr)
            worst = max(worst, EXIT_FAIL)
        else:
            print(f"npu-gate: warning: {name}: {UNCOVERED}", file=sys.stderr)
    return worst


UNCOVERED = ("not gated: no npu-gate contract names it as model.onnx; add one "
             "(npu-gate.json anywhere in the repository), pass --contracts GLOB for contracts "
             "with other names, or --profile NAME to gate it without a contract")


def _load_profile_option(ref: str, *, cheap: bool) -> Profile:
    from npu_gate.errors import ProfileError
    from npu_gate.profile.spec import load_profile

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


CONTRACT_NAME = re.compile(r"npu-gate(\.[^/]+)?\.(json|ya?ml)")


def contracts_covering(models: list[Path], patterns: list[str]) -> dict[Path, list[Path]]:
    """Each model (by resolved path) with the contracts whose ``model.onnx`` is that file:
    contract-named files anywhere in the model's repository (see ``search_root``) and the
    files the ``--contracts`` globs match. Each contract file is read once, for its model path."""
    candidates: list[tuple[Path, bool]] = []  # (contract, listed by --contracts)
    roots: list[Path] = []
    for model in models:
        root = search_root(model)
        if root not in roots:
            roots.append(root)
            candidates += [(p, False) for p in repository_contracts(root)]
    candidates += [(p, True) for p in _globbed(patterns)]
    covering: dict[Path, list[Path]] = {m.resolve(): [] for m in models}
    read: set[Path] = set()
    for path, listed in candidates:
        if path.resolve() in read:
            continue
        read.add(path.resolve())
        target = _named_model(path, listed)
        if target in covering:
            covering[target].append(path)
    return covering


def search_root(model: Path) -> Path:
    """The git repository holding the model (the closest folder above it with ``.git``), else
    the working directory (the model's own folder when it is outside the working directory)."""
    target = model.resolve()
    for folder in target.parents:
        if (folder / ".git").exists():
            return folder
    cwd = Path.cwd().resolve()
    return cwd if target.is_relative_to(cwd) else target.parent


def _skipped_folder(name: str) -> bool:
    return name in (".git", "node_modules", "site-packages") or name.startswith(".venv")


def repository_contracts(root: Path) -> list[Path]:
    """Contract-named files (npu-gate.json, npu-gate.*.json, YAML too) under ``root``, in path
    order, skipping .git, .venv*, node_modules and site-packages (links are not followed)."""
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not _skipped_folder(d))
        found += [Path(folder) / f for f in sorted(files) if CONTRACT_NAME.fullmatch(f)]
    return found


def _globbed(patterns: list[str]) -> list[Path]:
    import glob

    paths = []
    for pattern in patterns:
        matched = sorted(Path(m) for m in glob.glob(pattern, recursive=True) if Path(m).is_file())
        if not matched:
            raise GateError(f"--contracts: {pattern!r} matches no file")
        paths += matched
    return paths


def _named_model(path: Path, listed: bool) -> Path | None:
    """The resolved file a contract's ``model.onnx`` names, or None (a torch contract, a file
    that is not a contract). A contract-named file that cannot be parsed is npu-gate-contract's
    to report, so it names nothing here; one listed with --contracts is an error."""
    import importlib.util

    from npu_gate.validation import read_document

    try:
        doc = read_document(path, str(path))
    except ValueError as exc:
        # Without PyYAML whether a YAML contract names this model is unknown: skipping it
        # would pass a model its contract may fail.
        if listed or (path.suffix.lower() in (".yaml", ".yml")
                      and importlib.util.find_spec("yaml") is None):
            raise GateError(str(exc)) from None
        return None
    model = doc.get("model") if isinstance(doc, dict) else None
    ref = model.get("onnx") if isinstance(model, dict) else None
    return (path.parent / ref).resolve() if isinstance(ref, str) else None

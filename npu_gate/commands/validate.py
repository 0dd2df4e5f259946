"""`npu-gate validate`: contract and profile files against the schemas."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from npu_gate.errors import EXIT_ERROR, EXIT_PASS, GateError
from npu_gate.escape import visible


def run(args: argparse.Namespace) -> int:
    """Contract or profile files against the schemas (and what schemas cannot say).

    Exit 2 when any file is invalid: the same "could not run" a `check` gives for it.
    """
    from npu_gate.contract.spec import load_contract
    from npu_gate.profile.spec import load_profile
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
        print(f"npu-gate: error: {visible(problem)}", file=sys.stderr)
    return EXIT_ERROR if problems else EXIT_PASS

"""`npu-gate diff A B`: how two models, contracts or result JSONs differ, as the gate sees them.

Each side is an ONNX model (inspected with a profile), a contract (checked), or a result
JSON written earlier. Both become result dicts (``GateResult.to_dict()``), which
``npu_gate.compare.diff.diff_results`` compares.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from pathlib import Path
from typing import Any

from npu_gate.commands.common import refuse_overwriting_inputs, write_output
from npu_gate.errors import EXIT_FAIL, EXIT_PASS, GateError
from npu_gate.files import UnreadableFile, read_regular_text
from npu_gate.result.read import MERGED_KIND


def run(args: argparse.Namespace) -> int:
    from npu_gate.compare.diff import diff_results
    from npu_gate.render import diff_md

    refuse_overwriting_inputs([("side A of this diff", args.a), ("side B of this diff", args.b)],
                              [("--json", args.json), ("--markdown", args.markdown)])
    a = load_side(args.a, args.profile, args.today)
    b = load_side(args.b, args.profile, args.today)
    result = diff_results(a, b, (args.a, args.b))
    if args.json:
        write_output(args.json, json.dumps(result, indent=2) + "\n")
    if args.markdown:
        write_output(args.markdown, diff_md.render(result))
    if not args.quiet:
        sys.stdout.write(diff_md.render_text(result))
    return EXIT_PASS if result["identical"] else EXIT_FAIL


def load_side(arg: str, profile: str, today: dt.date | None = None) -> dict[str, Any]:
    """A result dict for one side: .onnx → inspect, contract → check, result JSON → as is."""
    path = Path(arg)
    if path.is_dir() or path.suffix in (".yaml", ".yml"):
        return _check(path, today)
    if path.suffix == ".onnx":
        from npu_gate.pipeline import inspect_model
        from npu_gate.profile.spec import load_profile

        return inspect_model(path, load_profile(profile, Path.cwd(), where="--profile")).to_dict()
    if path.suffix == ".json":
        try:  # /dev/zero, a FIFO: never read (nor waited on)
            doc = json.loads(read_regular_text(path, arg))
        except UnreadableFile as exc:
            raise GateError(str(exc)) from None
        except ValueError as exc:
            raise GateError(f"{arg}: cannot read JSON: {exc}") from None
        if isinstance(doc, dict) and "schema_version" in doc and "nodes" in doc:
            from npu_gate.result.read import check_result

            check_result(doc, arg)
            return doc
        if isinstance(doc, dict) and "model" in doc and "target" in doc:
            return _check(path, today)
        if isinstance(doc, dict) and doc.get("kind") == MERGED_KIND:
            found = doc.get("results")
            results: list[Any] = found if isinstance(found, list) else []
            names = ", ".join(str(r.get("name")) for r in results if isinstance(r, dict)) or "none"
            raise GateError(f"{arg}: a merged document (npu-gate merge, or the action's result-json for several "
                            f"models) holding {len(results)} result(s): {names}; diff one model's own result JSON "
                            "(`npu-gate check --json`; the action writes them to results/NN-NAME.json in its "
                            "artifacts-dir)")
        raise GateError(f"{arg}: neither a result JSON (schema_version, nodes) nor a contract")
    raise GateError(
        f"{arg}: expected an .onnx model, a contract (file or folder) or a result .json"
    )


def _check(path: Path, today: dt.date | None) -> dict[str, Any]:
    from npu_gate.contract.spec import find_contract, load_contract
    from npu_gate.pipeline import check_contract

    contract = load_contract(find_contract(str(path)))
    return check_contract(contract, today=today).to_dict()

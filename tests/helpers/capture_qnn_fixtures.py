"""Regenerate tests/fixtures/qnn/ by probing tests/helpers/qnn_models.py with the real onnxruntime-qnn.

    python -m tests.helpers.capture_qnn_fixtures [VENV [NAME ...]]

from the repository root (``tests`` imports as a package from there). VENV defaults to
.venv-qnn (``npu-gate probe setup qnn .venv-qnn``); NAMEs, if given, capture only those models.

Every fixture is what ``npu-gate probe --compiler qnn --keep-work`` left behind: the EP's raw
verbose log, the driver's response and exit status, and the session's graph assignment
(``assignment.json``), and for the ``qnn_models.QUANTIZED`` models (probed with ``--quantize``) the
QDQ model npu-gate prepared and its ``preparation.json``. Nothing here is written by hand. Each
model folder also gets the model and the probe's JSON result, which
tests/probe/test_probe_qnn_parse.py rebuilds from the kept files alone.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from npu_gate.cli import main
from tests.helpers import qnn_models
from tests.helpers.common import REPO

FIXTURES = REPO / "tests" / "fixtures" / "qnn"


def capture(venv: str, names: list[str] | None = None) -> None:
    for name, build in qnn_models.MODELS.items():
        if names and name not in names:
            continue
        folder = FIXTURES / name
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        model = folder / "model.onnx"
        model.write_bytes(build().SerializeToString())
        quantize = ["--quantize", qnn_models.QUANTIZED[name][1]] if name in qnn_models.QUANTIZED else []
        code = main(["probe", str(model), "--compiler", "qnn", "--target", "htp", "--venv", venv,
                     "--profile", "demo", "--keep-work", str(folder / "work"), "--json", str(folder / "probe.json"),
                     "-q", *quantize])
        _prune(folder / "work")
        doc = json.loads((folder / "probe.json").read_text(encoding="utf-8"))
        print(f"{name}: exit {code}, {doc['status']}, {doc['error'] or ''}")


def _prune(work: Path) -> None:
    """Keep what parsing needs: logs, responses, exit files and the assignment per attempt (and the
    prepared QDQ model, which the replay predicts on)."""
    for attempt in work.glob("attempt-*"):
        shutil.rmtree(attempt / "tmp", ignore_errors=True)
        (attempt / "request.json").unlink(missing_ok=True)  # holds absolute paths of this machine
    (work / "qnn-identities-folded.onnx").unlink(missing_ok=True)  # the float model before quantizing


if __name__ == "__main__":
    capture(sys.argv[1] if len(sys.argv) > 1 else ".venv-qnn", sys.argv[2:])

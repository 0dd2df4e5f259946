"""Regenerate tests/fixtures/rknn/ by probing tests/helpers/probe_models.py with the real toolkit.

    python -m tests.helpers.capture_rknn_fixtures [VENV [NAME ...]]

from the repository root (``tests`` imports as a package from there). VENV defaults to
.venv-rknn; NAMEs, if given, capture only those models.

Every fixture is what ``npu-gate probe --keep-work`` left behind: the compiler's raw log
(fd 1 and 2 of the child, colour codes and progress frames included), its response, its
exit status and its last graph dump. Nothing here is written by hand. Each model folder
also gets the model and the probe's JSON result, which tests/probe/test_probe.py
rebuilds from the kept files alone.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

from npu_gate.cli import main
from tests.helpers import probe_models
from tests.helpers.common import REPO

FIXTURES = REPO / "tests" / "fixtures" / "rknn"
_CHECK = re.compile(r"^check(\d+)_.*\.onnx$")


# Fixtures of quantized builds: name -> (model, extra probe arguments).
QUANTIZED = {"seed_hardswish_int8": ("seed_hardswish", ["--quantize", "int8"])}


def capture(venv: str, names: list[str] | None = None) -> None:
    for name, build in probe_models.MODELS.items():
        if names and name not in names:
            continue
        folder = FIXTURES / name
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        model = folder / "model.onnx"
        model.write_bytes(build().SerializeToString())
        code = main(["probe", str(model), "--compiler", "rknn", "--target", "rk3588", "--venv", venv,
                     "--keep-work", str(folder / "work"), "--json", str(folder / "probe.json"), "-q"])
        _prune(folder / "work")
        doc = json.loads((folder / "probe.json").read_text(encoding="utf-8"))
        print(f"{name}: exit {code}, {doc['status']}, {doc['error'] or ''}")


def capture_quantized(venv: str, names: list[str] | None = None) -> None:
    """The quantized builds of QUANTIZED, kept with their accuracy tables (seeded synthetic samples)."""
    for name, (model_name, extra) in QUANTIZED.items():
        if names and name not in names:
            continue
        folder = FIXTURES / name
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        model = folder / "model.onnx"
        model.write_bytes(probe_models.MODELS[model_name]().SerializeToString())
        code = main(["probe", str(model), "--compiler", "rknn", "--target", "rk3588", "--venv", venv, *extra,
                     "--profile", "rknn-rk3588", "--keep-work", str(folder / "work"),
                     "--json", str(folder / "probe.json"), "-q"])
        _prune(folder / "work")
        doc = json.loads((folder / "probe.json").read_text(encoding="utf-8"))
        print(f"{name}: exit {code}, {doc['status']}, {doc['error'] or ''}")


def _prune(work: Path) -> None:
    """Keep what parsing needs: logs, responses, exit files and the last graph dump per attempt."""
    for attempt in work.glob("attempt-*"):
        shutil.rmtree(attempt / "tmp", ignore_errors=True)
        (attempt / "request.json").unlink(missing_ok=True)  # holds absolute paths of this machine
        dumps = sorted((int(m.group(1)), p) for p in attempt.glob("check*.onnx") if (m := _CHECK.match(p.name)))
        for _, path in dumps[:-1]:
            path.unlink()
        for accuracy in attempt.glob("accuracy-*"):  # the table only, not the tensors it was computed from
            for child in accuracy.iterdir():
                if child.name != "error_analysis.txt":
                    shutil.rmtree(child) if child.is_dir() else child.unlink()
    shutil.rmtree(work / "samples", ignore_errors=True)  # seeded: rebuilt by the same request


if __name__ == "__main__":
    venv_arg, wanted = (sys.argv[1] if len(sys.argv) > 1 else ".venv-rknn"), sys.argv[2:]
    plain = [n for n in wanted if n not in QUANTIZED]
    if not wanted or plain:
        capture(venv_arg, plain)
    if not wanted or len(plain) < len(wanted):
        capture_quantized(venv_arg, [n for n in wanted if n in QUANTIZED])

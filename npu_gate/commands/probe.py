"""`npu-gate probe` and `npu-gate probe setup`: build a model with a real compiler and compare its
placement with the prediction; create a compiler's venv."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from npu_gate.commands.common import profile_inputs, refuse_overwriting_inputs, write_output
from npu_gate.errors import EXIT_FAIL, EXIT_PASS, GateError

if TYPE_CHECKING:
    from npu_gate.probe.base import Compiler, QuantRequest


def run(args: argparse.Namespace) -> int:
    from npu_gate.probe import get_compiler

    if args.model == "setup":
        if len(args.setup_args) != 2:
            raise GateError("usage: npu-gate probe setup COMPILER VENV [--torch] [--force]")
        return _probe_setup(get_compiler(args.setup_args[0]), Path(args.setup_args[1]), args)
    if args.setup_args:
        raise GateError(f"probe: unexpected arguments {' '.join(args.setup_args)} (one MODEL.onnx per probe)")
    from npu_gate.pipeline import probe_model
    from npu_gate.profile.spec import load_profile
    from npu_gate.render.probe import markdown, text

    compiler = get_compiler(args.compiler)
    if args.soc_model is not None and compiler.name != "qnn":
        raise GateError(f"--soc-model: only the qnn compiler takes a SoC model (--compiler {compiler.name})")
    if args.soc_model is not None and args.soc_model < 1:
        raise GateError(f"--soc-model {args.soc_model}: expected a positive QNN SoC id, e.g. 57")
    venv = Path(args.venv or f".venv-{compiler.name}")
    profile = load_profile(args.profile, Path.cwd(), where="--profile")
    if (args.model is None) == (args.factory is None):
        raise GateError("probe: give one model: MODEL.onnx or --factory MODULE:FUNCTION")
    inputs = _input_shapes(args.inputs)
    if args.quantize is not None:  # before any model is exported or read
        compiler.check_quant_mode(args.quantize)
    with tempfile.TemporaryDirectory(prefix="npu-gate-factory-") as tmp:
        options: dict[str, Any] = {}
        if args.factory is not None:
            from npu_gate.probe.factory import export_factory

            folder = Path(args.keep_work).resolve() if args.keep_work else Path(tmp)  # kept: replayable
            folder.mkdir(parents=True, exist_ok=True)
            model = export_factory(args.factory, inputs, Path.cwd(), folder / "model.onnx")
            options = {"factory": args.factory, "folder": str(Path.cwd()), "seed": 0, "calibration": 4}
        else:
            model = Path(args.model)
        if args.soc_model is not None:
            options["soc_model"] = args.soc_model
        quantization = _quant_request(args, compiler, model, inputs)
        refuse_overwriting_inputs(
            [("the model this run reads", str(model)), *profile_inputs(profile),
             *([("--calibration", args.calibration)] if args.calibration else [])],
            [("--json", args.json), ("--markdown", args.markdown), ("--log", args.log)], model=model)
        result = probe_model(model, compiler, args.target or compiler.default_target, compiler.python(venv),
                             inputs=inputs, profile=profile, timeout=args.timeout, options=options or None,
                             keep=Path(args.keep_work).resolve() if args.keep_work else None,
                             quantization=quantization)
    if args.json:
        write_output(args.json, json.dumps(result.to_dict(), indent=2) + "\n")
    if args.markdown:
        write_output(args.markdown, markdown(result))
    if args.log:
        write_output(args.log, "\n".join(result.log) + "\n")
    if not args.quiet:
        sys.stdout.write(text(result))
    return EXIT_PASS if result.built else EXIT_FAIL


def _probe_setup(compiler: Compiler, venv: Path, args: argparse.Namespace) -> int:
    from npu_gate.probe.setup_env import setup

    doc = setup(compiler, venv, torch=args.torch, python=args.python, force=args.force)
    if not args.quiet:
        how = "reused" if doc["reused"] else f"created in {doc['setup_s']:.1f} s"
        packages = doc.get("packages", {})
        version = packages.get(doc.get("product"), "?")
        print(f"npu-gate probe setup: {venv}: {doc['product']} {version}, torch {doc['torch']}, "
              f"{doc['size_bytes'] / 1e6:.0f} MB, {how}")
    return EXIT_PASS


def _quant_request(args: argparse.Namespace, compiler: Compiler, model: Path,
                   inputs: dict[str, list[int]]) -> QuantRequest | None:
    """``--quantize MODE`` with its samples (``--calibration``, ``--holdout``); None: the default build."""
    from npu_gate.probe.base import INTEGER_MODES, QuantRequest

    if args.quantize is not None:
        compiler.check_quant_mode(args.quantize)
    if args.quantize not in INTEGER_MODES:
        for flag, given in (("--calibration", args.calibration), ("--holdout", args.holdout)):
            if given is not None:
                raise GateError(f"{flag} {given}: samples are for --quantize int8 or int16 "
                                f"(given: {'--quantize ' + args.quantize if args.quantize else 'no --quantize'})")
        return QuantRequest(args.quantize, calibration_synthetic=False, holdout_synthetic=False) \
            if args.quantize else None
    if not model.is_file():
        raise GateError(f"{model}: no such model file")
    from npu_gate.quantize.samples import model_input_specs, request_sets

    specs = model_input_specs(model, inputs)
    samples = request_sets(specs, Path(args.calibration) if args.calibration else None,
                           Path(args.holdout) if args.holdout else None)
    return QuantRequest(args.quantize, samples.calibration, samples.holdout, samples.calibration_synthetic,
                        samples.holdout_synthetic)


def _input_shapes(specs: list[str]) -> dict[str, list[int]]:
    shapes: dict[str, list[int]] = {}
    for spec in specs:
        name, sep, dims = spec.rpartition(":")
        try:
            shape = [int(d) for d in dims.replace("x", ",").split(",")]
        except ValueError:
            shape = []
        if not sep or not name or not shape or any(d < 1 for d in shape):
            raise GateError(f"--inputs {spec}: expected NAME:DIMS with positive dims, e.g. images:1,3,224,224")
        shapes[name] = shape
    return shapes

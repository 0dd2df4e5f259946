"""Predicted vs actual on a handful of small exported nets: npu_gate's profile vs a real compiler
(RKNN-Toolkit2, or with ``--compiler qnn`` onnxruntime-qnn's HTP backend).

    python bench/probe_agreement.py [--compiler rknn|qnn] [--venv .venv-rknn] [--profile demo] [--out DIR]
    python bench/probe_agreement.py --torchvision [--compiler rknn|qnn] [--venv .venv-rknn] [--out DIR]
    python bench/probe_agreement.py --onnx DIR [--compiler rknn|qnn] [--venv VENV] [--profile rknn-rk3588] [--out X]
    python bench/probe_agreement.py --onnx DIR --compiler qnn --quantize int8 [--venv .venv-qnn] [--profile qnn-htp]
    python bench/probe_agreement.py --memory [--torchvision] [--venv .venv-rknn] [--out DIR]

Exports each net with the torchscript exporter (opset 17, default PyTorch init, eval mode),
probes it with the real toolkit (rk3588) and prints one Markdown row per net: nodes, how the
compiler placed them, its NPU/CPU segments against the profile's partitions, and the share of
nodes where prediction and compiler agree under the strict rule (a node the compiler removed
but the profile placed on a device disagrees), whether the predicted NPU partitions equal the
compiler's NPU segments, and, for a model the compiler refuses, whether the profile predicted
that (a `compiler-will-refuse` finding); totals last. `--onnx DIR` does the same for every
`*.onnx` in DIR (models exported elsewhere: `bench/model_sets.py` rebuilds the sets of
docs/rknn.md), each probe's JSON kept in `--out X` as `<model>.probe.json` (beside the model
without `--out`). Needs torch here and `npu-gate probe setup rknn`.

`--torchvision` does the same for real torchvision architectures (random init, `weights=None`:
nothing is downloaded) at small input sizes, builds each once and compares the build with all
three built-in RKNN profiles, then lists every disagreement. It needs torchvision in this
environment, which npu_gate itself never does: `pip install --no-deps torchvision==0.28.0 pillow`
(the torchvision release built for torch 2.13.0).

`--compiler qnn` (issue 22) probes the same nets with onnxruntime-qnn 2.7.0 (target htp, fp16 for
these float nets; `npu-gate probe setup qnn .venv-qnn`); `--torchvision` then compares with the
`qnn-htp` profile, and `--profile` defaults to it. With `--onnx DIR`, `--quantize int8|int16`
quantizes each float model for the HTP first, as `npu-gate probe --quantize` does (QNN's QDQ
preparation, 32 synthetic calibration samples) and compares the QDQ build with its QDQ placement;
the table gains each model's seconds (quantization, prediction and build). Without torchvision
here, export the `--torchvision` nets with another environment's torch and torchvision (the
torchvision_nets() and export() of this file) into DIR and use `--onnx DIR` (docs/qnn.md).

`--memory` (issue 24) builds the same nets under profile rknn-rk3588 (float16) and prints
the static memory estimate beside the compiler's own totals (`Total Internal Memory Size`,
`Total Weight Memory Size`) and their ratio estimate / compiler, per net.

`--memory --compiler ethos-u` (issues 23, 24) lowers the same nets for Ethos-U55-128 with
ExecuTorch's Arm backend and Vela (`npu-gate probe setup ethos-u .venv-ethos-u`; the nets are
imported from bench/bench_nets.py in that venv) and prints the static estimate (rknn-rk3588's
placement, float tensors counted as int8) beside Vela's SRAM and flash estimates.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import importlib.util
import json
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import torch
from torch import nn

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "examples" / "seed-hardswish"))
sys.path.insert(0, str(ROOT / "bench"))

from bench_nets import NETS  # noqa: E402

from npu_gate.pipeline import inspect_model  # noqa: E402
from npu_gate.pipeline import probe_model as probe  # noqa: E402
from npu_gate.pipeline import replay_model as replay  # noqa: E402
from npu_gate.probe import get_compiler  # noqa: E402
from npu_gate.probe.base import QuantRequest  # noqa: E402
from npu_gate.profile.spec import load_profile  # noqa: E402
from npu_gate.quantize.samples import model_input_specs, request_sets  # noqa: E402


def export(net: nn.Module, shape: tuple[int, ...], path: Path) -> None:
    torch.manual_seed(0)
    torch.onnx.export(net.eval(), (torch.rand(shape),), str(path), input_names=["x"], output_names=["y"],
                      opset_version=17, dynamo=False)


PROFILES = ("rknn-toolkit2-v2.1", "rknn-rk3588-fused", "rknn-rk3588")
# per compiler: its target, the profiles --torchvision compares with, the default --profile
COMPILERS = {"rknn": ("rk3588", PROFILES, "demo"), "qnn": ("htp", ("qnn-htp",), "qnn-htp"),
             "ethos-u": ("ethos-u55-128", (), "rknn-rk3588"),
             "fake": ("fake1", (), "demo")}  # npu_gate's test compiler: the bench's own tests


class SegmentationOut(nn.Module):
    """torchvision's segmentation models return a dict: export its "out" tensor."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.model(x)["out"]
        return out


def import_torchvision() -> ModuleType:
    """torchvision, imported here only: it is this bench's dependency, never npu_gate's.

    PyPI's torchvision wheel links its C++ ops (nms, roi_align, ...: detection ops) against the
    CUDA build of torch. Under a CPU-only torch (2.13.0+cpu) they cannot load, and torchvision
    0.28.0 then fails at import, registering a fake kernel for an op that does not exist. When the
    ops do not load, this declares the schemas of the two ops it registers that way, so the
    pure-Python models import; none of the models here calls a torchvision C++ op.
    """
    spec = importlib.util.find_spec("torchvision")
    if spec is None or spec.origin is None:
        sys.exit("--torchvision needs torchvision in this environment (the bench's own dependency, not npu_gate's): "
                 "pip install --no-deps torchvision==0.28.0 pillow  (the torchvision release for torch 2.13.0)")
    extension = next(Path(spec.origin).parent.glob("_C.*"), None)
    try:
        if extension is None:
            raise OSError("no _C extension")
        torch.ops.load_library(str(extension))
    except OSError:
        lib = torch.library.Library("torchvision", "DEF")
        for op in ("nms", "qnms"):
            lib.define(f"{op}(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
        _KEEP.append(lib)
    return importlib.import_module("torchvision")


_KEEP: list[Any] = []  # a torch.library.Library undefines its ops when it is garbage-collected


def torchvision_nets(tv: ModuleType) -> dict[str, tuple[Callable[[], nn.Module], tuple[int, ...]]]:
    """Real architectures, random init (``weights=None``: nothing is downloaded), small inputs."""
    m = tv.models
    return {
        "resnet18": (lambda: m.resnet18(weights=None), (1, 3, 64, 64)),
        "mobilenet_v3_small": (lambda: m.mobilenet_v3_small(weights=None), (1, 3, 64, 64)),
        "efficientnet_b0": (lambda: m.efficientnet_b0(weights=None), (1, 3, 64, 64)),
        "shufflenet_v2_x0_5": (lambda: m.shufflenet_v2_x0_5(weights=None), (1, 3, 64, 64)),
        "regnet_x_400mf": (lambda: m.regnet_x_400mf(weights=None), (1, 3, 64, 64)),
        "lraspp_mobilenet_v3_large": (
            lambda: SegmentationOut(m.segmentation.lraspp_mobilenet_v3_large(weights=None, weights_backbone=None)),
            (1, 3, 64, 64)),
        "tiny ViT (2 layers, d 32)": (lambda: tiny_vit(m), (1, 3, 32, 32)),
    }


def tiny_vit(models: ModuleType) -> nn.Module:
    """torchvision's VisionTransformer with small dims. Its init zeroes the classifier head, and
    the toolkit folds a Gemm with all-zero weights into a constant and then refuses the model
    ("All outputs ['y'] of model are constants"): the head gets random weights instead."""
    vit: nn.Module = models.VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=32,
                                              mlp_dim=64, num_classes=10)
    nn.init.normal_(vit.get_parameter("heads.head.weight"), std=0.02)
    return vit


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--compiler", choices=sorted(COMPILERS), default="rknn")
    parser.add_argument("--venv", help="the compiler's venv (default: .venv-COMPILER in the repository)")
    parser.add_argument("--profile", help="default: demo for rknn, qnn-htp for qnn")
    parser.add_argument("--torchvision", action="store_true",
                        help=f"torchvision architectures against {', '.join(PROFILES)} (--profile is ignored)")
    parser.add_argument("--memory", action="store_true",
                        help="the static memory estimate (profile rknn-rk3588) against the compiler's totals")
    parser.add_argument("--out", help="keep the exported models and probe JSON here")
    parser.add_argument("--onnx", metavar="DIR", help="the agreement table for every *.onnx in DIR, with --profile")
    parser.add_argument("--keep-work", metavar="DIR",
                        help="with --onnx: keep each probe's work folder (log, assignment, QDQ model) in DIR/<model>")
    parser.add_argument("--quantize", choices=["int8", "int16"],
                        help="qnn: quantize each float net to QDQ for the HTP first (npu-gate probe --quantize)")
    parser.add_argument("--timeout", type=float, metavar="SECONDS",
                        help="kill a compiler build after this long (default: the plug-in's, 600 s; as npu-gate "
                             "probe --timeout)")
    args = parser.parse_args()
    global COMPILER, QUANTIZE, KEEP_WORK, TIMEOUT
    COMPILER, QUANTIZE, TIMEOUT = args.compiler, args.quantize, args.timeout
    if TIMEOUT is not None and not TIMEOUT > 0:
        parser.error(f"--timeout: {args.timeout}: a positive number of seconds")
    KEEP_WORK = Path(args.keep_work) if args.keep_work else None
    if QUANTIZE and (COMPILER != "qnn" or not args.onnx):
        parser.error("--quantize: --compiler qnn with --onnx DIR only")
    venv = Path(args.venv or ROOT / f".venv-{args.compiler}")
    profile = args.profile or COMPILERS[args.compiler][2]
    if args.onnx:
        run_onnx(venv, profile, Path(args.onnx), Path(args.out) if args.out else None)
        return
    bench = run_torchvision if args.torchvision else run
    if args.memory:
        if args.compiler == "qnn":
            parser.error("--memory compares with the compiler's memory figures: --compiler rknn or ethos-u")
        if args.compiler == "ethos-u" and args.torchvision:
            parser.error("--memory --compiler ethos-u: the bench nets only (the Ethos-U venv has no torchvision)")
        bench = run_memory_torchvision if args.torchvision else run_memory
        if args.compiler == "ethos-u":
            bench = run_memory_ethos_u
    elif args.compiler == "ethos-u":
        parser.error("--compiler ethos-u: with --memory only (the agreement tables take an ONNX model)")
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        bench(venv, profile, Path(args.out))
    else:
        with tempfile.TemporaryDirectory(prefix="npu-gate-agreement-") as out:
            bench(venv, profile, Path(out))


COMPILER = "rknn"  # --compiler
QUANTIZE: str | None = None  # --quantize
KEEP_WORK: Path | None = None  # --keep-work: each probe's work folder under it, by model name
TIMEOUT: float | None = None  # --timeout (None: the plug-in's)


def run(venv: Path, profile_name: str, out: Path) -> None:
    paths = []
    for name, (cls, shape) in NETS.items():
        torch.manual_seed(0)
        path = out / (name.split()[0].lower() + ".onnx")
        export(cls(), shape, path)
        paths.append(path)
    agreement_table(venv, profile_name, paths)


def run_onnx(venv: Path, profile_name: str, folder: Path, out: Path | None = None) -> None:
    """Every ``*.onnx`` in ``folder`` (exported elsewhere: torchvision, public packages); each
    probe's JSON goes to ``out`` (``--out``) as ``<model>.probe.json``, else beside the model."""
    paths = sorted(folder.glob("*.onnx")) if folder.is_dir() else []
    if not paths:
        print(f"probe_agreement.py: --onnx {folder}: "
              f"{'no *.onnx in it' if folder.is_dir() else 'no such folder'}", file=sys.stderr)
        sys.exit(2)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
    agreement_table(venv, profile_name, paths, out)


def quant_request(path: Path) -> QuantRequest | None:
    """``--quantize``'s request as ``npu-gate probe --quantize MODE`` makes it without sample files:
    seeded synthetic calibration and hold-out rows in the model's input shapes."""
    if QUANTIZE is None:
        return None
    samples = request_sets(model_input_specs(path, {}), None, None)
    return QuantRequest(QUANTIZE, samples.calibration, samples.holdout, samples.calibration_synthetic,
                        samples.holdout_synthetic)


def agreement_table(venv: Path, profile_name: str, paths: list[Path], out: Path | None = None) -> None:
    """One row per model, then the totals: node agreement under the strict rule (a node the
    compiler removed but the profile placed on a device disagrees), whether the predicted NPU
    partitions equal the compiler's NPU segments, and, for the builds the compiler refuses,
    whether the profile predicted it (a compiler-will-refuse finding). Each probe's JSON is
    written to ``out`` (None: beside its model) as ``<model>.probe.json``."""
    compiler = get_compiler(COMPILER)
    target = COMPILERS[COMPILER][0]
    profile = load_profile(profile_name)
    print(f"{compiler.product}, {target}, profile `{profile_name}`"
          + (f", quantized {QUANTIZE} QDQ by npu-gate (QNN preparation)" if QUANTIZE else ""))
    print("| net | nodes | actual npu / cpu / split / fused / folded | compiler NPU / CPU segments | "
          "predicted NPU / CPU partitions | NPU partitions = segments | node agreement (strict) | "
          "refusal predicted | rules disabled to build | s |")
    print("| --- | ---: | --- | --- | --- | --- | ---: | --- | --- | ---: |")
    built = agree_parts = agree = compared = refused = refusal_hits = false_refusals = 0
    needed_rules: dict[str, list[str]] = {}  # model -> the toolkit rules its build needed disabled
    for path in paths:
        start = time.perf_counter()
        predicted = inspect_model(path, profile)
        refuses = any(f.rule == "compiler-will-refuse" for f in predicted.findings)
        keep: dict[str, Any] = {"keep": KEEP_WORK / path.stem} if KEEP_WORK is not None else {}
        if TIMEOUT is not None:
            keep["timeout"] = TIMEOUT
        result = probe(path, compiler, target, compiler.python(venv), profile=profile,
                       quantization=quant_request(path), **keep)
        kept = (out / path.name if out is not None else path).with_suffix(".probe.json")
        kept.write_text(json.dumps(result.to_dict(), indent=2), encoding="utf-8")
        s = result.summary or {}
        if result.status != "ok":
            refused += 1
            refusal_hits += refuses
            error = " ".join(str(result.error).split())[:120]
            print(f"| {path.stem} | {len(result.nodes)} | {result.status}: {error} | | | | | "
                  f"{'yes' if refuses else 'no'} | | |")
            continue
        disabled = disabled_rules(result.attempts)
        if disabled:
            needed_rules[path.stem] = disabled
        built += 1
        false_refusals += refuses
        agree_parts += bool(s["partitions_agree"])
        agree, compared = agree + s["agree"], compared + s["compared"]
        a = s["actual"]
        rate = f"{s['agree']}/{s['compared']} ({s['agreement_rate']:.1%})" if s["compared"] else "n/a"
        print(f"| {path.stem} | {s['nodes']} | {a['npu']} / {a['cpu']} / {a['split']} / {a['fused']} / "
              f"{a['folded']} | {s['npu_segments']} / {s['cpu_segments']} | {s['predicted_npu_partitions']} / "
              f"{s['predicted_cpu_partitions']} | {'yes' if s['partitions_agree'] else 'no'} | {rate} | "
              f"{'yes (wrong)' if refuses else 'no'} | {', '.join(f'`{r}`' for r in disabled) or '-'} | "
              f"{time.perf_counter() - start:.0f} |")
    share = f"{agree}/{compared} ({agree / compared:.1%})" if compared else "n/a"
    which = "; ".join(f"{m}: {', '.join(r)}" for m, r in needed_rules.items())
    print(f"\nBuilt {built} of {len(paths)}: NPU partition count equal to the NPU segments on {agree_parts} of "
          f"{built}; nodes agreeing (strict) {share}; refused {refused}, predicted {refusal_hits} of {refused}; "
          f"refusal predicted for a model that builds: {false_refusals}; built only with toolkit rules disabled "
          f"(the default build raised, the probe's retry built): {len(needed_rules)} of {built}"
          + (f" ({which})" if which else "")
          + ".")


def stub_message() -> str:
    """The torch stub's error text, read from its source: importing npu_gate/probe/torch_stub.py would
    install its import hook in this process, and every later ``import torch.x`` (torchvision's, timm's)
    would get an inert stub module."""
    tree = ast.parse((ROOT / "npu_gate" / "probe" / "torch_stub.py").read_text(encoding="utf-8"))
    message: str = next(ast.literal_eval(node.value) for node in tree.body if isinstance(node, ast.Assign)
                        and any(isinstance(t, ast.Name) and t.id == "STUB_MESSAGE" for t in node.targets))
    return message


def disabled_rules(attempts: list[Any]) -> list[str]:
    """The rules the successful attempt disabled (none when the first, default, build succeeded),
    each marked "(torch stub)" when the attempt before it failed on npu_gate's torch stub (a rule
    that calls torch: with real torch, ``probe setup rknn VENV --torch``, it may not raise)."""
    if len(attempts) < 2 or attempts[-1].status != "ok":
        return []
    stub = stub_message().split("{}")[0]
    out = []
    for before, rule in zip(attempts[:-1], attempts[-1].options.get("disable_rules", []), strict=False):
        out.append(f"{rule} (torch stub)" if stub in str(before.error) else str(rule))
    return out


def run_torchvision(venv: Path, _profile: str, out: Path) -> None:
    tv = import_torchvision()
    compiler = get_compiler(COMPILER)
    target, names, _ = COMPILERS[COMPILER]
    profiles = [load_profile(name) for name in names]
    start = time.perf_counter()
    rows: list[str] = []
    groups: dict[tuple[Any, ...], list[str]] = {}  # (net, op, predicted, actual, became, cause, profiles) -> nodes
    failures: list[str] = []
    version = None
    for name, (build, shape) in torchvision_nets(tv).items():
        net_start = time.perf_counter()
        slug = name.split()[0].lower()
        path = out / f"{slug}.onnx"
        torch.manual_seed(0)
        export(build(), shape, path)
        work = out / f"{slug}.work"
        results = [probe(path, compiler, target, compiler.python(venv), profile=profiles[0], keep=work)]
        results += [replay(path, compiler, target, work, profile) for profile in profiles[1:]]
        seconds = time.perf_counter() - net_start
        version = version or results[0].compiler["version"]
        for profile_name, result in zip(names, results, strict=True):
            doc = json.dumps(result.to_dict(), indent=2)
            path.with_suffix(f".{profile_name}.probe.json").write_text(doc, encoding="utf-8")
        if results[0].status != "ok":
            failures.append(f"- {name}: the compiler {results[0].status}: {results[0].error}")
        else:
            _group_disagreements(name, names, results, groups)
        rows.append(_torchvision_row(name, shape, results, seconds))
    print(f"{compiler.product} {version}, {target}, torch {torch.__version__}, torchvision {tv.__version__}, "
          f"opset 17 torchscript exporter, random init; {time.perf_counter() - start:.0f} s in all\n")
    print("| net | input | nodes | actual npu / cpu / split / fused / folded | compiler NPU / CPU segments | "
          + " | ".join(f"`{p}` partitions, agreement" for p in names) + " | s |")
    print("| --- | --- | ---: | --- | --- | " + " | ".join("---" for _ in names) + " | ---: |")
    print("\n".join(rows))
    print("\nDisagreements (nodes of one kind: predicted, by which profiles -> what the compiler did; cause):")
    for (net, op_type, predicted, actual, became, cause, names), nodes in groups.items():
        example = f"{nodes[0]}" if len(nodes) == 1 else f"{len(nodes)} nodes, e.g. {nodes[0]}"
        print(f"- {net}: {op_type} ({example}): {predicted} by {', '.join(names)} -> {actual}"
              f"{f' as {became}' if became else ''}; {cause}")
    print("\n".join(failures))


MEMORY_PROFILE = "rknn-rk3588"


def run_memory(venv: Path, _profile: str, out: Path) -> None:
    memory_table(venv, out, {name: (cls, shape) for name, (cls, shape) in NETS.items()})


def run_memory_torchvision(venv: Path, _profile: str, out: Path) -> None:
    memory_table(venv, out, torchvision_nets(import_torchvision()))


def memory_table(venv: Path, out: Path, nets: dict[str, tuple[Callable[[], nn.Module], tuple[int, ...]]]) -> None:
    """One row per net: the estimate's peak and weights, the compiler's totals, the ratios."""
    compiler = get_compiler("rknn")
    profile = load_profile(MEMORY_PROFILE)
    start = time.perf_counter()
    rows, version = [], None
    for name, (build, shape) in nets.items():
        torch.manual_seed(0)
        path = out / (name.split()[0].lower() + ".onnx")
        export(build(), shape, path)
        result = probe(path, compiler, "rk3588", compiler.python(venv), profile=profile)
        path.with_suffix(".probe.json").write_text(json.dumps(result.to_dict(), indent=2), encoding="utf-8")
        version = version or result.compiler["version"]
        measured, estimate = result.memory["compiler"], result.memory["estimate"]
        if not measured or not estimate:
            rows.append(f"| {name} | {result.status}: no totals | | | | | | |")
            continue
        peak, internal = estimate["peak_activation_bytes"], measured["internal_bytes"]
        weights, weight_memory = estimate["weight_bytes"], measured["weight_bytes"]
        rows.append(f"| {name} | {estimate['npu_partitions']} | {_kib(peak)} | {_kib(internal)} | "
                    f"{_ratio(peak, internal)} | {_kib(weights)} | {_kib(weight_memory)} | "
                    f"{_ratio(weights, weight_memory)} |")
    print(f"rknn-toolkit2 {version}, rk3588, profile {MEMORY_PROFILE} (float16), torch {torch.__version__}, "
          f"opset 17 torchscript exporter; {time.perf_counter() - start:.0f} s in all\n")
    print("| net | NPU partitions | estimated peak activations | compiler internal memory | ratio | "
          "estimated weights | compiler weight memory | ratio |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    print("\n".join(rows))


def run_memory_ethos_u(venv: Path, _profile: str, out: Path) -> None:
    """One row per bench net: the static estimate (under MEMORY_PROFILE's placement, float tensors
    counted as int8, the build Vela compiles) beside Vela's SRAM and flash estimates for U55-128."""
    from dataclasses import replace

    compiler = get_compiler("ethos-u")
    target = COMPILERS["ethos-u"][0]
    # int8 is no profile runtime_dtype (the schema has none for it yet): set here, for this bench only
    profile = replace(load_profile(MEMORY_PROFILE), runtime_dtype="int8")
    start = time.perf_counter()
    rows, evidence = [], None
    for name, (cls, shape) in NETS.items():
        folder = out / cls.__name__
        folder.mkdir(parents=True, exist_ok=True)
        torch.manual_seed(0)
        path = folder / "model.onnx"  # the dynamo export, whose metadata ties the compiler's nodes to it
        torch.onnx.export(cls().eval(), (torch.rand(shape),), str(path), input_names=["x"], dynamo=True)
        options = {"factory": f"bench_nets:{cls.__name__}", "folders": [str(ROOT / "bench")], "seed": 0,
                   "calibration": 4}
        result = probe(path, compiler, target, compiler.python(venv), profile=profile, inputs={"x": list(shape)},
                       options=options)
        path.with_suffix(".probe.json").write_text(json.dumps(result.to_dict(), indent=2), encoding="utf-8")
        vela, estimate = result.estimates, result.memory["estimate"]
        if not vela or not estimate:
            rows.append(f"| {name} | {result.status}: {result.error} | | | | | | | |")
            continue
        evidence = evidence or vela["evidence"]
        cpu = sum(1 for n in result.nodes if n.actual == "cpu")
        peak, sram = estimate["peak_activation_bytes"], vela["sram_bytes"]
        weights, flash = estimate["weight_bytes"], vela["flash_bytes"]
        rows.append(f"| {name} | {vela['npu_partitions']} | {cpu} | {_kib(peak)} | {_kib(sram)} | {_ratio(peak, sram)} "
                    f"| {_kib(weights)} | {_kib(flash)} | {_ratio(weights, flash)} |")
    print(f"{evidence}; static estimate under profile {MEMORY_PROFILE}'s placement with float tensors as int8; "
          f"torch {torch.__version__}, dynamo exporter; {time.perf_counter() - start:.0f} s in all\n")
    print("| net | Vela NPU partitions | CPU nodes | estimated peak activations | Vela SRAM (largest partition) "
          "| ratio | estimated weights | Vela flash (all partitions) | ratio |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    print("\n".join(rows))


def _kib(value: int | None) -> str:
    return "unknown" if value is None else f"{value / 1024:,.2f} KiB"


def _ratio(estimate: int | None, measured: int | None) -> str:
    return "n/a" if estimate is None or not measured else f"{estimate / measured:.2f}"


def _group_disagreements(net: str, names: tuple[str, ...], results: list[Any],
                         groups: dict[tuple[Any, ...], list[str]]) -> None:
    """One entry per kind of disagreement: the same op, predictions, outcome and cause, over the profiles."""
    by_node: dict[str, dict[str, Any]] = {}
    for profile_name, result in zip(names, results, strict=True):
        for d in result.summary["disagreements"]:
            entry = by_node.setdefault(d["node"], {**d, "predicted": {}})
            entry["predicted"][profile_name] = d["predicted"]
    for node, d in by_node.items():
        predicted = sorted(set(d["predicted"].values()))
        names = tuple(d["predicted"]) if len(predicted) == 1 else tuple(f"{p} ({v})" for p, v in d["predicted"].items())
        key = (net, d["op_type"], "/".join(predicted), d["actual"], d["became"], d["cause"], names)
        groups.setdefault(key, []).append(node)


def _torchvision_row(name: str, shape: tuple[int, ...], results: list[Any], seconds: float) -> str:
    first, size = results[0], "x".join(map(str, shape))
    s = first.summary or {}
    if first.status != "ok":
        actual = f"{first.status} | "
    else:
        a = s["actual"]
        actual = f"{a['npu']} / {a['cpu']} / {a['split']} / {a['fused']} / {a['folded']} | " \
            f"{s['npu_segments']} / {s['cpu_segments']}"
    cells = []
    for result in results:
        r = result.summary
        npu = r["predicted_npu_partitions_with_adapters"]
        cpu = r["predicted_cpu_partitions_with_adapters"]
        if npu is None:
            npu, cpu = r["predicted_npu_partitions"], r["predicted_cpu_partitions"]
        cells.append(f"{npu} / {cpu}, {r['agree']}/{r['compared']} ({r['agreement_rate']:.0%})")
    return f"| {name} | {size} | {len(first.nodes)} | {actual} | " + " | ".join(cells) + f" | {seconds:.0f} |"


def _exit_on_sigterm(signum: int, _frame: object) -> None:
    """SIGTERM (a killed bench run) as an exception where the run is: the probe then kills its compiler
    child (it is in a session of its own and would outlive the bench)."""
    raise SystemExit(128 + signum)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    main()

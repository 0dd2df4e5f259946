"""Rockchip RKNN-Toolkit2: compiles ONNX for Rockchip NPUs offline on x86 and prints an op table.

Facts this module relies on (measured with rknn-toolkit2 2.5.0, see docs/rknn.md):
- with ``verbose=True`` the build prints a "Network Layer Information Table" whose
  ``Target`` column is NPU or CPU and whose ``FullName`` is ``OpType:node`` of the
  toolkit's last graph;
- Python-side rewrites are logged as ``rule: remove node = [...], add node = [...]``;
- the toolkit dumps ``checkN_<pass>.onnx`` into its working folder; the highest N is the
  graph handed to the compiler;
- when a rewrite rule raises, the log says ``You can add disable_rules=['rule']``;
- a quantized build (``build(do_quantization=True, dataset=TXT)``, TXT listing one sample per
  line, its inputs' ``.npy`` files space-separated) is followed here by ``accuracy_analysis``
  on each hold-out sample, which runs the toolkit's simulator (no board) and writes
  ``error_analysis.txt``: one row per layer, ``[OpType] tensor`` then the ``entire`` and
  ``single`` cosine | euclidean figures (a row without figures: a layer fused into the next);
- after its memory plan (``Feature Tensor Information Table`` with each tensor's
  ``[Start End) Size``), the build prints ``Total Internal Memory Size: 25.5KB`` and
  ``Total Weight Memory Size: 2.625KB``; KB is 1024 bytes (25.5KB is the plan's end, 0x6600).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

from npu_gate.probe.base import ChildRun, Compiler, CompilerOutput, QuantRequest, save_rows
from npu_gate.result.probe import OpRow, Rewrite
from npu_gate.result.types import CPU, NPU

# Pins from the toolkit's own metadata limits (numpy<=1.26.4, onnx<=1.18.0, protobuf<=4.25.4);
# onnxruntime 1.26.0 is the newest that accepts numpy 1.x. The toolkit itself goes in with
# --no-deps because it also pins torch<=2.4.0, which the ONNX path never needs.
TOOLKIT = "rknn-toolkit2==2.5.0"
RUNTIME_DEPS = [
    "numpy==1.26.4", "onnx==1.18.0", "protobuf==4.25.4", "onnxruntime==1.26.0",
    "opencv-python-headless==4.11.0.86", "scipy==1.13.1", "psutil", "ruamel.yaml", "tqdm", "fast-histogram",
]
# Real torch: a few rewrite rules (reshape around Split/axis ops) call torch.arange. Newer
# setuptools dropped pkg_resources, which the toolkit imports once real torch is present.
TORCH_DEPS = ["torch==2.13.0", "setuptools==80.9.0"]

_PREFIX = re.compile(r"^[DIWE] RKNN: \[[^\]]*\]\s?")
_REWRITE = re.compile(r"^D\s+(?P<rule>[^\s:]+):?\s+remove nodes?\s*=\s*(?P<rest>\[.*)$")
_VERSION = re.compile(r"rknn-toolkit2 version: (\S+)")
_DISABLE = re.compile(r"disable_rules=\[\s*'([^']+)'")
_ERROR = re.compile(r"^E (?P<where>[\w.]+): (?P<message>.+)$")
_CHECK = re.compile(r"^check(\d+)_.*\.onnx$")
_MEMORY = re.compile(r"Total (?P<what>Internal|Weight) Memory Size:\s*(?P<value>[0-9.]+)\s*(?P<unit>[KMG]?B)\b")
_UNIT = {"B": 1, "KB": 1024, "MB": 1024**2, "GB": 1024**3}
_MEMORY_KEYS = {"Internal": "internal_bytes", "Weight": "weight_bytes"}
TABLE_TITLE = "Network Layer Information Table"
IO_OPS = ("InputOperator", "OutputOperator")
_TARGETS = {"NPU": NPU, "CPU": CPU}
ACCURACY_FILE = "error_analysis.txt"
_LAYER = re.compile(r"^\[(?P<op>[^\]]+)\]\s+(?P<rest>.*)$")
_PAIR = re.compile(r"(?P<cos>\S+)\s*\|\s*(?P<euc>\S+)")
_ACCURACY_DIR = re.compile(r"^accuracy-(\d+)$")


class RknnCompiler(Compiler):
    name = "rknn"
    product = "rknn-toolkit2"
    driver = "rknn_driver.py"
    default_target = "rk3588"
    timeout_s = 600.0
    batch = True
    # rknn-toolkit2 2.5.0 has wheels for cp36-cp312, onnxruntime 1.26.0 for cp311 and up, and
    # RKNN() imports pkg_resources, which only 3.11's venv brings (setuptools; 3.12's has none).
    pythons = ((3, 11),)

    def setup_steps(self, *, torch: bool) -> list[list[str]]:
        steps = [["--no-deps", TOOLKIT], RUNTIME_DEPS]
        if torch:
            steps.append(TORCH_DEPS)
        return steps

    def stub_torch(self, *, torch: bool) -> bool:
        return not torch

    quant_modes = ("int8", "fp16", "none")  # fp16 and none: the toolkit's default (float16) build

    def quantization_options(self, quant: QuantRequest, work: Path) -> dict[str, Any]:
        """int8: the calibration rows as ``.npy`` files listed in ``dataset.txt`` (one sample a line,
        its inputs space-separated, as ``build(dataset=...)`` reads it) and the hold-out rows'
        files for ``accuracy_analysis``."""
        if quant.mode != "int8":
            return {}
        calibration = save_rows(quant.calibration, work, "calibration")
        dataset = work / "dataset.txt"
        dataset.write_text("".join(" ".join(str(p) for p in row) + "\n" for row in calibration), encoding="utf-8")
        holdout = save_rows(quant.holdout, work, "holdout")
        return {"quantization": {"mode": "int8", "dataset": str(dataset.resolve()),
                                 "holdout": [[str(p) for p in row] for row in holdout]}}

    def parse(self, run: ChildRun, work: Path) -> CompilerOutput:
        out = parse_log(run.log)
        out.version = run.response.get("version") or out.version
        if run.response.get("error"):
            out.error = run.response["error"]
        out.final_graph, out.final_consumers, out.final_ops, out.final_io, out.final_tensors = final_graph(work)
        out.accuracy = accuracy(work, out.version, run.response.get("accuracy_error"))
        return out

    def graph_name(self, name: str, original_name: str | None, outputs: list[str]) -> str:
        """The toolkit names an unnamed node after its first output (fixture ``gemm_unnamed``)."""
        if original_name == "" and outputs and outputs[0]:
            return outputs[0]
        return name

    def retry_options(self, output: CompilerOutput, options: dict[str, Any]) -> dict[str, Any] | None:
        rule = output.retry_rule
        if rule is None or rule in options.get("disable_rules", []):
            return None
        return {**options, "disable_rules": [*options.get("disable_rules", []), rule]}


def parse_log(lines: list[str]) -> CompilerOutput:
    """Version, rewrites, the last op table and the first error out of a cleaned log."""
    out = CompilerOutput()
    table_at = None
    for i, line in enumerate(lines):
        if out.version is None and (m := _VERSION.search(line)):
            out.version = m.group(1)
        if m := _REWRITE.match(line):
            out.rewrites.append(_rewrite(m.group("rule"), m.group("rest")))
        if TABLE_TITLE in line:
            table_at = i
        if out.retry_rule is None and (m := _DISABLE.search(line)):
            out.retry_rule = m.group(1)
        if out.error is None and (m := _ERROR.match(line)) and not m.group("message").startswith("Traceback"):
            out.error = f"{m.group('where')}: {m.group('message').strip()}"
        if m := _MEMORY.search(line):  # the last build's totals win
            out.memory = (out.memory or {}) | {
                _MEMORY_KEYS[m.group("what")]: round(float(m.group("value")) * _UNIT[m.group("unit")])}
    if table_at is not None:
        out.rows = parse_table(lines[table_at + 1:])
    return out


def _rewrite(rule: str, rest: str) -> Rewrite:
    removed_text, _, added_text = rest.partition(", add node")
    added_text = added_text.split("=", 1)[1].strip() if added_text else "[]"
    return Rewrite(rule=rule, removed=_names(removed_text), added=_names(added_text))


def _names(text: str) -> list[str]:
    try:
        value = ast.literal_eval(text.strip())
    except (ValueError, SyntaxError):
        return []
    return [str(v) for v in value] if isinstance(value, list) else []


def parse_table(lines: list[str]) -> list[OpRow]:
    """Rows of one op table: a header line, then rows until the closing rule line.

    A row whose FullName cell is empty (the Conv RKNN-Toolkit2 2.5.0 inserts before a linear
    Resize of an odd-sized input) has an empty ``full_name``: no node of the last graph."""
    header: list[str] | None = None
    name_at = 0  # where the FullName column starts
    rows: list[OpRow] = []
    for raw in lines:
        line = _PREFIX.sub("", raw)
        if not line.strip() or set(line.strip()) == {"-"}:
            if rows:
                break
            continue
        if header is None:
            if line.split()[0] == "ID":
                header = line.split()
                name_at = line.find("FullName")
            continue
        parts = line.split(None, len(header) - 1)
        if len(parts) == len(header) - 1 and header[-1] == "FullName" and len(line.rstrip()) <= name_at:
            parts.append("")  # an op the compiler added without a name: the row ends before the FullName column
        if len(parts) < len(header) or not parts[0].isdigit():
            break
        cell = dict(zip(header, parts, strict=True))
        op_type = cell["OpType"]
        _, _, full_name = cell["FullName"].strip().partition(":")
        rows.append(OpRow(
            id=int(cell["ID"]), op_type=op_type, target=_TARGETS.get(cell["Target"], cell["Target"].lower()),
            full_name=full_name, data_type=cell.get("DataType"), input_shapes=_shape(cell.get("InputShape")),
            output_shapes=_shape(cell.get("OutputShape")), io=op_type in IO_OPS,
        ))
    return rows


def _shape(text: str | None) -> str | None:
    return None if text in (None, "\\") else text


Edges = dict[str, list[str]]
GraphIo = dict[str, list[tuple[str, str]]]
Tensors = dict[str, tuple[list[str], list[str]]]


def final_graph(work: Path) -> tuple[Edges | None, Edges | None, dict[str, str] | None, GraphIo | None,
                                     Tensors | None]:
    """Producers, consumers, op types, graph inputs/outputs and input/output tensors of the nodes
    in the toolkit's last dumped graph, if any."""
    dumps = [(int(m.group(1)), p) for p in work.glob("check*.onnx") if (m := _CHECK.match(p.name))]
    if not dumps:
        return None, None, None, None, None
    import onnx

    try:
        graph = onnx.load(str(max(dumps)[1]), load_external_data=False).graph
    except Exception:  # an unreadable dump only costs the fused-into lookup
        return None, None, None, None, None
    producer = {out: n.name for n in graph.node for out in n.output}
    producers: dict[str, list[str]] = {}
    consumers: dict[str, list[str]] = {n.name: [] for n in graph.node}
    for n in graph.node:
        producers[n.name] = [producer[i] for i in n.input if i in producer]
        for p in producers[n.name]:
            consumers[p].append(n.name)
    weights = {t.name for t in graph.initializer}
    inputs = {i.name for i in graph.input if i.name not in weights}
    outputs = {o.name for o in graph.output}
    io: GraphIo = {}
    for n in graph.node:
        at = [("input", t) for t in dict.fromkeys(n.input) if t in inputs]
        at += [("output", t) for t in n.output if t in outputs]
        if at:
            io[n.name] = at
    tensors = {n.name: ([i for i in n.input if i and i not in weights], list(n.output)) for n in graph.node}
    return producers, consumers, {n.name: n.op_type for n in graph.node}, io, tensors


def accuracy(work: Path, version: str | None, error: str | None = None) -> dict[str, Any] | None:
    """The ``accuracy_analysis`` tables of one run (``accuracy-K/error_analysis.txt``), merged over
    the hold-out samples: per layer the worst cosine (lowest) and euclidean distance (highest).
    None when the run made none (a float build)."""
    tables = []
    for folder in sorted((p for p in work.glob("accuracy-*") if _ACCURACY_DIR.match(p.name)),
                         key=lambda p: int(p.name.split("-")[1])):
        path = folder / ACCURACY_FILE
        if path.is_file():
            tables.append(parse_accuracy(path.read_text(encoding="utf-8", errors="replace").splitlines()))
    if not tables and error is None:
        return None
    layers: list[dict[str, Any]] = []
    for table in tables:
        for i, row in enumerate(table):
            if i == len(layers):
                layers.append({**row, "entire": dict(row["entire"]), "single": dict(row["single"])})
            elif (layers[i]["op_type"], layers[i]["tensor"]) == (row["op_type"], row["tensor"]):
                for part in ("entire", "single"):
                    layers[i][part] = _worst(layers[i][part], row[part])
    return {"evidence": f"measured by rknn-toolkit2 {version or 'unknown version'} simulator "
                        f"(accuracy_analysis, float vs int8, worst of {len(tables)} hold-out samples)",
            "samples": len(tables), "error": error, "layers": layers}


def parse_accuracy(lines: list[str]) -> list[dict[str, Any]]:
    """The rows of one ``error_analysis.txt``: ``[OpType] tensor`` then ``cos | euc`` pairs, entire
    first and single second; figures None on a row without them (a layer fused into the next)."""
    rows = []
    for line in lines:
        m = _LAYER.match(line.strip())
        if m is None:
            continue
        rest = m.group("rest")
        pairs = list(_PAIR.finditer(rest))
        tensor = (rest[:pairs[0].start()] if pairs else rest).strip()
        figures = [{"cos": _figure(p.group("cos")), "euc": _figure(p.group("euc"))} for p in pairs[:2]]
        while len(figures) < 2:
            figures.append({"cos": None, "euc": None})
        rows.append({"op_type": m.group("op"), "tensor": tensor, "entire": figures[0], "single": figures[1]})
    return rows


def _figure(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if value == value else None  # NaN: not a figure


def _worst(a: dict[str, float | None], b: dict[str, float | None]) -> dict[str, float | None]:
    cos = [v for v in (a["cos"], b["cos"]) if v is not None]
    euc = [v for v in (a["euc"], b["euc"]) if v is not None]
    return {"cos": min(cos) if cos else None, "euc": max(euc) if euc else None}

"""Arm Ethos-U through ExecuTorch's Arm backend and Vela: lowers a PyTorch module offline.

Facts this module relies on (measured with executorch 1.5.1, ethos-u-vela 5.2.0, torch 2.13.0,
see docs/ethos-u.md):
- with the logger ``executorch.backends.arm.tosa.partitioner`` at INFO the partitioner prints a
  box table of rejected nodes (``Node name | Target | Torch func | Reason``), cells wrapped over
  several lines;
- Vela runs once per delegated partition and prints, with ``--verbose-performance``, a per-layer
  table (``Original Operator ... Op Cycles ... Name``) and a ``Network summary`` (accelerator,
  system config, memory mode, clock, ``Total SRAM used``, ``Total Off-chip Flash used``, CPU/NPU
  operator counts);
- the lowered program keeps what was not delegated as plain graph nodes; the driver lists every
  compute node with its device and the ``nn_module_stack``/``stack_trace`` metadata.

The driver works on the PyTorch module, not on the ONNX file: its nodes are tied to the ONNX
nodes of the gate's own (dynamo) export by module path and user source line. An ONNX node whose
key matches no lowered node, or nodes on both devices, is reported unmapped, never guessed.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from npu_gate.errors import GateError
from npu_gate.probe.base import ChildRun, Compiler, CompilerOutput
from npu_gate.result.probe import OpRow
from npu_gate.result.types import CPU, NPU

TORCH = "torch==2.13.0"
PACKAGES = ["executorch==1.5.1", "ethos-u-vela==5.2.0", "tosa-tools==2026.8.0"]
LEGACY = "legacy_core"  # request option: Vela --debug-force-legacy-core
CORES = {False: "regor (default)", True: "legacy (--debug-force-legacy-core)"}

_BOX_ROW = re.compile(r"^│(.*)│\s*$")
_SIZE = re.compile(r"^(?P<value>[0-9.]+)\s*(?P<unit>[KMG]?i?B)$")
_UNIT = {"B": 1, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3, "KB": 1000, "MB": 1000**2, "GB": 1000**3}
_SUMMARY_KEYS = {
    "Accelerator configuration": "accelerator", "System configuration": "system_config",
    "Memory mode": "memory_mode", "Accelerator clock": "clock",
}


class EthosUCompiler(Compiler):
    name = "ethos-u"
    product = "ethos-u-vela"
    driver = "ethos_u_driver.py"
    timeout_s = 900.0
    # measured on 3.11 only (executorch 1.5.1 + torch 2.13.0 wheels); pass --python python3.11 elsewhere
    pythons = ((3, 11),)
    needs_torch = True
    needs_factory = True

    def setup_steps(self, *, torch: bool) -> list[list[str]]:
        return [[TORCH], PACKAGES]  # the flow is PyTorch's own: real torch whatever --torch says

    def check_quant_mode(self, mode: str, where: str = "--quantize") -> None:
        """Arm's flow always quantizes int8 itself (EthosUQuantizer): no mode to choose."""
        raise GateError(f"{where} {mode}: the ethos-u plug-in always builds int8 with Arm's own quantizer "
                        "(EthosUQuantizer), calibrated on 4 seeded rows (probe --factory) or a torch contract's "
                        "quantization samples; leave out --quantize")

    def request(self, model: Path, target: str, inputs: dict[str, list[int]],
                options: dict[str, Any]) -> dict[str, Any]:
        if not options.get("factory"):
            raise GateError(f"{model.name}: the ethos-u probe lowers a PyTorch module: give it with --factory "
                            "MODULE:FUNCTION or a torch contract's target.probe (the ONNX route, onnx2tf to int8 "
                            "TFLite, is not built yet: its result depends on that converter as much as on Vela)")
        ranges = options.get("ranges") or {}
        return {"model": str(model), "target": target,
                "inputs": [{"name": k, "shape": v, "range": ranges.get(k, [0.0, 1.0])} for k, v in inputs.items()],
                **{k: v for k, v in options.items() if k != "ranges"}}

    def parse(self, run: ChildRun, work: Path) -> CompilerOutput:
        out = CompilerOutput(version=run.response.get("version"))
        legacy = bool(run.response.get(LEGACY) or _request(work).get(LEGACY))
        rejected = parse_rejected(run.log)
        partitions = parse_vela(run.log)
        if run.response.get("error"):
            out.error = run.response["error"]
        placement = run.response.get("placement")
        if run.response.get("status") == "ok" and placement is not None:
            model = Path(_request(work).get("model") or work / "missing.onnx")
            if model.is_file():
                out.rows, out.unmapped, out.node_reasons = rows_for(model, placement, rejected, partitions)
            else:  # a replay after the gate's export was removed: nothing to tie the nodes to
                out.error = f"{model}: the gate's ONNX export is gone: the compiler's nodes cannot be mapped"
        out.estimates = estimates(partitions, out.version, CORES[legacy]) if partitions else None
        out.core = CORES[legacy]
        return out

    def retry_options(self, output: CompilerOutput, options: dict[str, Any]) -> dict[str, Any] | None:
        """No retry with Vela's legacy core on this route: measured, Vela 5.2.0 refuses
        ``--debug-force-legacy-core`` for ExecuTorch's TOSA input ("The legacy core only supports
        Ethos-U55 and Ethos-U65 systems and TFLite input networks"). ``legacy_core`` stays a request
        option for the TFLite route (not built yet)."""
        return None


def _request(work: Path) -> dict[str, Any]:
    try:
        doc: dict[str, Any] = json.loads((work / "request.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return doc


def parse_rejected(lines: list[str]) -> list[dict[str, str]]:
    """The partitioner's rejected-node table: {node, target, torch_fn, reason}, wrapped cells joined."""
    rows: list[dict[str, str]] = []
    header: list[str] | None = None
    current: list[list[tuple[str, int]]] | None = None
    for line in lines:
        text = line.strip()
        if text.startswith(("├", "╘")) and current is not None and header is not None:
            rows.append(_row(header, current))
            current = None
            continue
        m = _BOX_ROW.match(text)
        if m is None:
            continue
        raw = m.group(1).split("│")
        cells = [c.strip() for c in raw]
        if header is None and cells and cells[0] == "Node name":
            header = cells
            continue
        if header is None or len(cells) != len(header):
            continue
        current = current or [[] for _ in header]
        for parts, cell, width in zip(current, cells, raw, strict=True):
            if cell:
                parts.append((cell, len(width) - 2))  # the text width: one space of padding each side
    return rows


def _row(header: list[str], parts: list[list[tuple[str, int]]]) -> dict[str, str]:
    text = dict(zip(header, (_join(p) for p in parts), strict=True))
    return {"node": text.get("Node name", ""), "target": text.get("Target", ""),
            "torch_fn": text.get("Torch func", ""), "reason": " ".join(text.get("Reason", "").split())}


def _join(parts: list[tuple[str, int]]) -> str:
    """Wrapped cell text. The table wraps at spaces and cuts only a word longer than the column
    (``builtin_fun`` / ``ction_or_method``): two parts continue one word when the first fills its
    column and its last word and the second's first word could not have fitted on one line together."""
    out = ""
    filled = False  # the previous part reached the column's last character
    for part, width in parts:
        if out and filled and len(out.split(" ")[-1]) + len(part.split(" ")[0]) > width:
            out += part
        else:
            out += (" " if out else "") + part
        filled = len(part) >= width
    return out


def parse_vela(lines: list[str]) -> list[dict[str, Any]]:
    """One entry per Vela run (a delegated partition): its layers and its network summary."""
    partitions: list[dict[str, Any]] = []
    columns: list[tuple[str, int, int]] | None = None
    for i, line in enumerate(lines):
        if line.startswith("Original Operator") and i + 1 < len(lines) and lines[i + 1].startswith("---"):
            columns = _columns(line, lines[i + 1])
            partitions.append({"layers": []})
            continue
        if columns is not None:
            if line.startswith("---"):
                continue
            if not line.strip():  # the table ends at the first blank line
                columns = None
                continue
            cell = {name: line[a:b].strip() for name, a, b in columns}
            partitions[-1]["layers"].append({"op": cell.get("Original Operator", ""),
                                             "target": cell.get("Target", "").lower(),
                                             "cycles": _int(cell.get("Op Cycles")), "name": cell.get("Name", "")})
            continue
        if not partitions:
            continue
        summary = partitions[-1]
        for key, field in _SUMMARY_KEYS.items():
            if line.startswith(key):
                summary[field] = line[len(key):].strip()
        if line.startswith("Total SRAM used"):
            summary["sram_bytes"] = _bytes(line[len("Total SRAM used"):])
        if m := re.match(r"Total (?:Off|On)-chip Flash used\s+(.*)$", line):
            summary["flash_bytes"] = _bytes(m.group(1))
        if m := re.match(r"(CPU|NPU) operators = (\d+)", line):
            summary[f"{m.group(1).lower()}_operators"] = int(m.group(2))
    return partitions


def _columns(header: str, rule: str) -> list[tuple[str, int, int]]:
    spans = [(m.start(), m.end()) for m in re.finditer(r"-+", rule)]
    out = []
    for k, (a, b) in enumerate(spans):
        end = spans[k + 1][0] if k + 1 < len(spans) else 10_000
        out.append((header[a:b + 1].strip() if k + 1 < len(spans) else header[a:].strip(), a, end))
    return out


def _int(text: str | None) -> int | None:
    return int(text) if text and text.isdigit() else None


def _bytes(text: str) -> int | None:
    m = _SIZE.match(text.strip())
    return round(float(m.group("value")) * _UNIT[m.group("unit")]) if m else None


def estimates(partitions: list[dict[str, Any]], version: str | None, core: str) -> dict[str, Any]:
    """Vela's memory and performance estimates, summed over the partitions it compiled.

    SRAM: the largest partition's (they run one after another); flash: the sum; cycles: the sum of
    the per-layer Op Cycles; time: cycles at the accelerator clock Vela assumed."""
    first = partitions[0]
    config = f"{first.get('accelerator')}, {first.get('system_config')}, {first.get('memory_mode')}"
    cycles = [layer["cycles"] for p in partitions for layer in p["layers"]]
    clock = re.match(r"([0-9.]+)\s*MHz", first.get("clock") or "")
    total = sum(c for c in cycles if c is not None) if cycles and None not in cycles else None
    ms = round(total / (float(clock.group(1)) * 1e3), 4) if total is not None and clock else None
    srams = [p.get("sram_bytes") for p in partitions]
    flashes = [p.get("flash_bytes") for p in partitions]
    return {
        "evidence": f"estimated by Vela {version or 'unknown version'} for {config}",
        "core": core,
        "config": {"accelerator": first.get("accelerator"), "system_config": first.get("system_config"),
                   "memory_mode": first.get("memory_mode"), "clock": first.get("clock")},
        "sram_bytes": max(s for s in srams if s is not None) if any(s is not None for s in srams) else None,
        "flash_bytes": sum(f for f in flashes if f is not None) if all(f is not None for f in flashes) else None,
        "cycles": total,
        "estimated_ms": ms,
        "npu_partitions": len(partitions),
        "vela_cpu_operators": sum(p.get("cpu_operators", 0) for p in partitions),
        "partitions": [{k: p.get(k) for k in ("sram_bytes", "flash_bytes", "npu_operators", "cpu_operators")}
                       | {"cycles": sum(x["cycles"] or 0 for x in p["layers"])} for p in partitions],
    }


Key = tuple[str, str, int]


def rows_for(model: Path, placement: list[dict[str, Any]], rejected: list[dict[str, str]],
             partitions: list[dict[str, Any]]) -> tuple[list[OpRow], list[str], dict[str, str]]:
    """One op row per ONNX node of ``model`` whose (module path, user source line) key matches
    lowered nodes all on one device; the unmapped ONNX nodes; per ONNX node on the CPU, the
    partitioner's reason."""
    import onnx

    from npu_gate.graph.source import NAME_SCOPES, STACK_TRACE, user_frame

    reason_of = {r["node"]: r["reason"] for r in rejected}
    by_key: dict[Key, list[dict[str, Any]]] = {}
    for node in placement:
        key = _key(node["module_path"], user_frame(node["stack_trace"], None))
        if key is not None:
            by_key.setdefault(key, []).append(node)
    vela_cpu = any(p.get("cpu_operators") for p in partitions)
    graph = onnx.load(str(model), load_external_data=False).graph
    keys: list[Key | None] = []
    for node in graph.node:
        props = {p.key: p.value for p in node.metadata_props}
        scopes = re.findall(r"'((?:[^'\\]|\\.)*)'", props.get(NAME_SCOPES, ""))
        keys.append(_key(scopes[-2] if len(scopes) >= 2 else None, user_frame(props.get(STACK_TRACE, ""), None)))
    fused = fused_convs(graph, keys, by_key, placement)
    rows: list[OpRow] = []
    unmapped: list[str] = []
    reasons: dict[str, str] = {}
    for node, key in zip(graph.node, keys, strict=True):
        matched = fused.get(node.name) or (by_key.get(key, []) if key is not None else [])
        devices = {n["device"] for n in matched}
        if len(devices) != 1 or (vela_cpu and devices == {"npu"}):
            # no lowered node, nodes on both devices, or Vela itself put ops of a partition on the CPU
            if node.op_type != "Constant":
                unmapped.append(node.name)
            continue
        device = NPU if devices == {"npu"} else CPU
        found = "; ".join(dict.fromkeys(reason_of[n["name"]] for n in matched if n["name"] in reason_of))
        if device == CPU:
            reasons[node.name] = found or "not delegated by the partitioner"
        elif found:  # the table rejected it, yet the lowered program has it in a delegate (measured: MaxPool 8x8/8)
            reasons[node.name] = f"in an NPU delegate although the partitioner's table rejected it: {found}"
        rows.append(OpRow(id=len(rows), op_type=node.op_type, target=device, full_name=node.name,
                          data_type="int8", input_shapes=None, output_shapes=None))
    return rows, unmapped, reasons


def fused_convs(graph: Any, keys: list[Key | None], by_key: dict[Key, list[dict[str, Any]]],
                placement: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """ONNX Convs the exporter's optimizer fused with their BatchNorm (``FuseBatchNormIntoConv``)
    carry the BatchNorm's module path (``stem.1``), which no lowered node has: ExecuTorch folds the
    BatchNorm into the convolution, which keeps the Conv's (``stem.0``). Such a Conv is tied to a
    lowered convolution no ONNX node claims, with the same parent module and user source line; when
    a parent and line hold several, the k-th fused Conv to the k-th convolution (both graphs trace
    the same Python calls, in execution order), and only when their counts agree. Anything else
    stays unmapped."""
    claimed = {k for k in keys if k is not None and k in by_key}
    convs: dict[Key, list[dict[str, Any]]] = {}
    for lowered_key, nodes in by_key.items():
        if lowered_key not in claimed:
            for lowered in nodes:
                if "aten.convolution" in lowered["target"]:
                    convs.setdefault(_parent(lowered_key), []).append(lowered)
    waiting: dict[Key, list[str]] = {}
    for node, key in zip(graph.node, keys, strict=True):
        rule = next((p.value for p in node.metadata_props if p.key == REWRITE_RULE), "")
        if node.op_type == "Conv" and key is not None and key not in by_key and FUSED_BN in rule:
            waiting.setdefault(_parent(key), []).append(node.name)
    order = {id(n): i for i, n in enumerate(placement)}  # the lowered program's execution order
    out: dict[str, list[dict[str, Any]]] = {}
    for group, names in waiting.items():
        found = sorted(convs.get(group, []), key=lambda n: order[id(n)])
        if len(found) == len(names):
            out.update({name: [conv] for name, conv in zip(names, found, strict=True)})
    return out


REWRITE_RULE = "pkg.onnxscript.rewriter.rule_name"  # the exporter's optimizer: which rewrites made a node
FUSED_BN = "FuseBatchNormIntoConv"


def _parent(key: Key) -> Key:
    return key[0].rpartition(".")[0], key[1], key[2]


def _key(module_path: str | None, frame: tuple[str, int, str, str] | None) -> Key | None:
    if module_path is None or frame is None:
        return None
    return module_path, frame[0], frame[1]

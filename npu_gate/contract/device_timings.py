"""Latencies measured on the board by the user, for the review table.

The gate never estimates device latency; it only shows figures from this file. Format,
JSON::

    {"source": "how and where it was measured",
     "timings": [{"scope": "model", "key": "seed-hardswish", "ms": 1.92},
                 {"scope": "partition", "key": "0", "ms": 0.81},
                 {"scope": "node", "key": "/Clip", "ms": 0.30}]}

or CSV with the header ``scope,key,ms`` and one row per figure. ``scope`` is ``model``
(key: the contract name), ``partition`` (key: a partition id of the checked graph) or
``node`` (key: a node name); ``ms`` is milliseconds, a finite number at least 0. A figure whose key matches
nothing is listed in the result (``device_timings.unmatched``) and warned about by the CLI.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from npu_gate.errors import ContractError
from npu_gate.files import MAX_DOCUMENT_BYTES, UnreadableFile, read_regular_text
from npu_gate.validation import loads_json

SCOPES = ("model", "partition", "node")


@dataclass(frozen=True)
class DeviceTiming:
    scope: str
    key: str
    ms: float

    def to_dict(self) -> dict[str, Any]:
        return {"scope": self.scope, "key": self.key, "ms": self.ms}


@dataclass(frozen=True)
class DeviceTimings:
    source: str | None
    path: str
    entries: dict[tuple[str, str], DeviceTiming]

    def unmatched(self, nodes: set[str], partitions: set[str], model: str) -> list[DeviceTiming]:
        """The figures whose key names no node, no partition or not the model, in file order."""
        known = {"node": nodes, "partition": partitions, "model": {model}}
        return [t for (scope, key), t in self.entries.items() if key not in known[scope]]

    def lookup(self, node: str | None, partition: int | None, model: str) -> DeviceTiming | None:
        """The most specific figure: the node's, else its partition's, else the model's."""
        for scope, key in (("node", node), ("partition", None if partition is None else str(partition)),
                           ("model", model)):
            if key is not None and (scope, key) in self.entries:
                return self.entries[(scope, key)]
        return None


def load(path: Path, label: str | None = None) -> DeviceTimings:
    label = label or str(path)
    try:  # a FIFO, /dev/zero: never read (nor waited on); a file past the limit: unparsed
        text = read_regular_text(path, label, MAX_DOCUMENT_BYTES, "a device timings file",
                                 missing="cannot read: No such file or directory")
    except UnreadableFile as exc:
        raise ContractError(str(exc)) from None
    source = None
    rows: list[tuple[str, Any]]  # CSV rows are dicts of strings; JSON rows can be anything
    if path.suffix.lower() == ".csv":
        reader = csv.DictReader(text.splitlines())
        if reader.fieldnames is None or not {"scope", "key", "ms"} <= set(reader.fieldnames):
            raise ContractError(f"{label}: the CSV header must name the columns scope,key,ms")
        rows = [(f"row {n}", row) for n, row in enumerate(reader, start=2)]
    else:
        try:
            doc = loads_json(text, label)  # no NaN, Infinity, 10,000-digit number or 100,000-deep nesting
        except ValueError as exc:
            raise ContractError(str(exc)) from None
        if not isinstance(doc, dict) or not isinstance(doc.get("timings"), list):
            raise ContractError(f"{label}: expected an object with a `timings` list")
        source = doc.get("source") if isinstance(doc.get("source"), str) else None
        rows = [(f"timings[{i}]", row) for i, row in enumerate(doc["timings"])]
    problems = []
    entries: dict[tuple[str, str], DeviceTiming] = {}
    for where, row in rows:
        if not isinstance(row, dict):
            problems.append(f"{label}: {where}: expected an object with scope, key, ms")
            continue
        scope, key = row.get("scope"), row.get("key")
        try:
            # JSON true is no figure, and infinity or NaN ("inf" in a CSV cell) no measurement.
            value = row.get("ms")
            ms = -1.0 if value is None or isinstance(value, bool) else float(value)
        except (TypeError, ValueError):
            ms = -1.0
        if not math.isfinite(ms):
            ms = -1.0
        if scope not in SCOPES:
            problems.append(f"{label}: {where}: scope {scope!r} is not one of {', '.join(SCOPES)}")
        elif key is None or str(key) == "":
            problems.append(f"{label}: {where}: key is missing")
        elif not ms >= 0:
            problems.append(f"{label}: {where}: ms {row.get('ms')!r} is not a finite number of milliseconds >= 0")
        elif (scope, str(key)) in entries:
            problems.append(f"{label}: {where}: {scope} {key!r} appears twice")
        else:
            entries[(scope, str(key))] = DeviceTiming(scope, str(key), ms)
    if problems:
        raise ContractError(*problems)
    return DeviceTimings(source, path.name, entries)


def unmatched_warnings(doc: dict[str, Any] | None, model: str) -> list[str]:
    """One line per figure of a result's ``device_timings`` that matched nothing (a typo in
    a node name would otherwise just leave the review table saying "not measured")."""
    if doc is None:
        return []
    lines = []
    for u in doc.get("unmatched", []):
        scope, key = u["scope"], u["key"]
        what = (f"is not the contract's name {model!r}" if scope == "model"
                else f"matches no {scope} of the checked graph")
        lines.append(f"{doc['path']}: {scope} {key!r} {what}; its figure is not used")
    return lines

"""Profiles in words: one sentence per constraint, and a supported-operators page.

``describe`` is used by ``npu-gate explain``, ``npu-gate profile show`` and the
generated ``docs/profiles/<name>.md`` (``npu-gate profile docs``). Profile text is
reviewed data, but it is still escaped for Markdown tables (pipes, angle brackets).
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from npu_gate.profile.checks.base import words, words_set
from npu_gate.profile.checks.registry import parse, parse_test
from npu_gate.profile.limits import LIMIT_IDS
from npu_gate.profile.spec import Profile

LIMIT_WORDS = {
    "opset": "model opset (default domain)",
    "domains": "op domains",
    "dtypes": "dtypes of runtime tensors",
    "max_rank": "rank of runtime tensors",
    "max_tensor_elements": "elements of one runtime tensor",
    "max_tensor_bytes": "bytes of one runtime tensor",
    "static_shapes": "every runtime tensor has a static shape",
}


def describe_test(c: dict[str, Any]) -> str:
    """One subject and its tests in words, e.g. ``attribute strides: each element in {1, 2}``."""
    return parse_test(c).describe()


def describe(c: dict[str, Any]) -> str:
    """A whole constraint in words (without its id), after its condition if it has one."""
    return parse(c).describe()


def describe_limit(key: str, value: Any) -> str:
    label = LIMIT_WORDS.get(key, key)
    if key == "opset":
        lo, hi = value.get("min"), value.get("max")
        if lo is not None and hi is not None:
            return f"{label}: {lo} to {hi}"
        return f"{label}: " + (f"at most {hi}" if lo is None else f"at least {lo}")
    if key in ("domains", "dtypes"):
        return f"{label}: {words_set(['ai.onnx' if v == '' else v for v in value])}"
    if key == "static_shapes":
        return label if value else f"{label}: not required"
    return f"{label}: at most {value:,}"


def _cell(text: str) -> str:
    """Text for a Markdown table cell: pipes escaped, and angle brackets outside code spans (a code
    span shows an entity literally: `->` would read `-&gt;`; inside one, < and > are text)."""
    parts = text.replace("|", "\\|").replace("\n", " ").split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick: no code span to keep
        parts = ["`".join(parts)]
    return "`".join(p if i % 2 else p.replace("<", "&lt;").replace(">", "&gt;") for i, p in enumerate(parts))


@dataclass(frozen=True)
class FileRefs:
    """How a page shows a profile's relative file references (its ``doc`` values naming a
    file beside the profile, e.g. the calibration record)."""

    folder: str  # the profile's folder: relative to the page when linked, as shown otherwise
    linked: bool = True  # False: the page is read where that folder cannot be reached


def link(url: str, label: str = "doc", base: FileRefs | None = None) -> str:
    """A Markdown link; ``base``: where a relative ``url`` (a profile's own file reference)
    resolves. Unlinked references are shown as text: the file's path beside the profile."""
    if base is not None and not re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:|#", url):
        if not base.linked:
            return "`" + posixpath.join(base.folder, url).replace("`", "'").replace("|", "\\|") + "`"
        url = posixpath.normpath(posixpath.join(base.folder, url.split("#", 1)[0]))  # no anchors in JSON files
    return f"[{label}]({quote(url, safe=':/?#&=%.-_~+,;@')})"


def render_markdown(
    profile: Profile, origin: str, page_dir: str | None = "docs/profiles", *, page: bool = True
) -> str:
    """A supported-operators page for one profile, to be written into ``page_dir`` (relative
    like a built-in's ``origin``): relative file references in the profile are rewritten to
    resolve from the page. ``page_dir`` None: the page is read where the profile's folder
    cannot be reached, so they are shown as text, their path beside ``origin``.
    ``page=False``: for the terminal (`profile show`), without the generated-file comment."""
    base = None
    if not posixpath.isabs(origin):
        folder = posixpath.dirname(origin) or "."
        base = FileRefs(folder, False) if page_dir is None else FileRefs(posixpath.relpath(folder, page_dir))
    lines = [f"# Target profile `{profile.name}`", ""]
    if page:
        lines += [f"<!-- Generated from {origin} by `npu-gate profile docs`; do not edit. -->", ""]
    lines += [
        _cell(profile.description),
        "",
        "| | |",
        "| --- | --- |",
        f"| source | {_cell(profile.source)} |",
        f"| evidence | `{profile.evidence}` |",
    ]
    if profile.extends:
        lines.append(f"| extends | {' → '.join(f'`{b}`' for b in profile.extends)} |")
    docs = {c.get("doc") for spec in profile.ops.values() for c in spec.get("constraints", [])}
    common = docs.pop() if len(docs) == 1 else None  # one link for all: say it once
    if common:
        lines.append(f"| constraints documented at | {link(common, _cell(common), base)} |")
    lines.append(f"| runtime dtype (memory estimate) | "
                 f"{'`' + profile.runtime_dtype + '` for float tensors' if profile.runtime_dtype else 'the model’s'} |")
    lines.append(f"| memory budget | {_memory_cell(profile.memory)} |")
    if profile.memory and profile.memory.get("layout"):
        lines.append(f"| memory layout (estimate) | {_layout_cell(profile.memory)} |")
    lines += [f"| ops | {len(profile.ops)} |", ""]
    lines += [
        "A profile check is a static prediction, not a device result. A listed op is predicted "
        "to run on the target (placement `npu`) when every condition below holds; anything "
        "else falls back to CPU.",
        "",
    ]
    if profile.limits:
        lines += ["## Limits for every op", ""]
        for key, value in profile.limits.items():
            if key == "doc":
                continue
            lines.append(f"- {_cell(describe_limit(key, value))} (`{LIMIT_IDS[key]}`)")
        if profile.limits.get("doc"):
            lines.append(f"- source: {link(profile.limits['doc'], base=base)}")
        lines.append("")
    lines += [
        f"## Supported operators ({len(profile.ops)})",
        "",
        "| operator | conditions |",
        "| --- | --- |",
    ]
    for key in sorted(profile.ops, key=lambda k: (("::" in k), k.lower())):
        spec = profile.ops[key]
        cells = []
        for c in spec.get("constraints", []):
            text = f"`{c['id']}`: {_cell(describe(c))}"
            if c.get("message"):
                text += f" — “{_cell(c['message'])}”"
            if c.get("doc") and c["doc"] != common:
                text += f" ({link(c['doc'], base=base)})"
            if c.get("fix"):
                text += f" *Fix:* {_cell(c['fix'])}"
            cells.append(text)
        if spec.get("note"):
            cells.append(f"*Note:* {_cell(spec['note'])}")
        if spec.get("vendor_op"):
            cells.insert(0, f"*Vendor op:* {_cell(spec['vendor_op'])}")
        lines.append(f"| `{key}` | {'<br>'.join(cells) or 'no conditions'} |")
    if profile.unknown_ops:
        lines += [
            "",
            f"## Not claimed ({len(profile.unknown_ops)})",
            "",
            "The source says nothing usable about these ops (or it could not be read): the profile "
            "claims neither support nor its absence. Their nodes are not predicted to run on the "
            "target (`unsupported-op`, like any op not listed above).",
            "",
            "| operator | why |",
            "| --- | --- |",
        ]
        for key in sorted(profile.unknown_ops, key=str.lower):
            lines.append(f"| `{key}` | {_cell(profile.unknown_ops[key])} |")
    if profile.patterns:
        lines += ["", *render_patterns(profile, base)]
    if profile.rank_adapters:
        lines += ["", *render_rank_adapters(profile.rank_adapters, base)]
    lines += render_compiler_passes(profile)
    return "\n".join(lines) + "\n"


def render_text(profile: Profile, origin: str) -> str:
    """`profile show` for a terminal: what the Markdown page says, as plain indented text
    (a relative file reference shown as its path beside the profile)."""
    folder = posixpath.dirname(origin) if not posixpath.isabs(origin) else None

    def ref(url: str) -> str:
        if folder is None or re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:|#", url):
            return url
        return posixpath.join(folder or ".", url)

    lines = [f"Target profile {profile.name} ({profile.evidence})", f"  {profile.description}",
             f"  source: {profile.source}"]
    if profile.extends:
        lines.append(f"  extends: {' -> '.join(profile.extends)}")
    docs = {c.get("doc") for spec in profile.ops.values() for c in spec.get("constraints", [])}
    common = docs.pop() if len(docs) == 1 else None
    if common:
        lines.append(f"  constraints documented at: {ref(common)}")
    lines += ["", "A static prediction, not a device result: a listed op is predicted to run on the target",
              "when every condition below holds; anything else falls back to CPU."]
    limits = [k for k in profile.limits if k != "doc"]
    if limits:
        lines += ["", "Limits for every op:"]
        lines += [f"  {describe_limit(k, profile.limits[k])} ({LIMIT_IDS[k]})" for k in limits]
        if profile.limits.get("doc"):
            lines.append(f"  source: {ref(profile.limits['doc'])}")
    lines += ["", f"Supported operators ({len(profile.ops)}):"]
    for key in sorted(profile.ops, key=lambda k: (("::" in k), k.lower())):
        spec = profile.ops[key]
        constraints = spec.get("constraints", [])
        lines.append(f"  {key}" + ("" if constraints or spec.get("note") else ": no conditions"))
        for c in constraints:
            text = f"    {c['id']}: {describe(c)}"
            if c.get("message"):
                text += f" ({c['message']})"
            if c.get("doc") and c["doc"] != common:
                text += f" [{ref(c['doc'])}]"
            lines.append(text)
            if c.get("fix"):
                lines.append(f"      fix: {c['fix']}")
        if spec.get("note"):
            lines.append(f"    note: {spec['note']}")
    if profile.patterns:
        lines += ["", f"Fused patterns ({len(profile.patterns)}), placed as the op they become:"]
        for p in profile.patterns:
            cpu = "" if p.get("supported", True) else " (CPU)"
            lines.append(f"  {p['name']}: {describe_pattern_nodes(p['nodes'])} -> {p['becomes']}{cpu}")
            lines += [f"    {c['id']}: {describe(c)}" for c in p.get("constraints", [])]
            if p.get("evidence"):
                lines.append(f"    evidence: {p['evidence']}" + (f" [{ref(p['doc'])}]" if p.get("doc") else ""))
    if profile.rank_adapters:
        rule = profile.rank_adapters
        lines += ["", *(line.replace("`", "") for line in render_rank_adapters(rule)[2:3])]
        if rule.get("doc"):
            lines.append(f"  source: {ref(rule['doc'])}")
    return "\n".join(line.replace("\n", " ") for line in lines) + "\n"
def _memory_cell(memory: dict[str, Any] | None) -> str:
    """The profile's memory budget in one cell: its figures and evidence, or none stated."""
    if not memory:
        return "none stated"
    figures = [f"{key} {memory[key]:,}" for key in ("sram_bytes", "dram_bytes", "weight_bytes")
               if memory.get(key) is not None]
    if not figures and memory.get("layout"):
        return "none stated"  # a layout only: shown on its own row
    return _cell(f"{', '.join(figures) or 'no figure'} ({memory['evidence']})")


def _layout_cell(memory: dict[str, Any]) -> str:
    """The profile's ``memory.layout`` in one cell: each stated key and the memory evidence."""
    figures = [f"{key} {value}" for key, value in memory["layout"].items()]
    return _cell(f"{', '.join(figures)} ({memory['evidence']})")


def describe_pattern_nodes(nodes: list[dict[str, Any]]) -> str:
    """``Add(x, 3) → Clip(#0, 0, 6) → ...``: pattern nodes with their inputs (#k: node k)."""
    parts = []
    for node in nodes:
        args = []
        for item in node.get("inputs", []):
            if "node" in item:
                args.append(f"#{item['node']}" + (f".{item['output']}" if item.get("output") else ""))
            elif "tensor" in item:
                args.append(item["tensor"])
            else:
                args.append("const" if item["const"] is True else words(item["const"]))
        attrs = "".join(f", {k}={words(v)}" for k, v in node.get("attributes", {}).items())
        parts.append(f"{node['op']}({', '.join(args)}{attrs})")
    return " → ".join(parts)


def render_patterns(profile: Profile, base: FileRefs | None = None) -> list[str]:
    lines = [
        f"## Fused patterns ({len(profile.patterns)})",
        "",
        "Subgraphs the target fuses into one op before it checks support: every node of a match "
        "is placed with the fused op, even an op the profile does not list on its own. "
        "`#k` is the output of pattern node k; Add/Mul inputs match in either order.",
        "",
        "| pattern | becomes | nodes | evidence |",
        "| --- | --- | --- | --- |",
    ]
    for p in profile.patterns:
        becomes = f"`{p['becomes']}`" + ("" if p.get("supported", True) else " (CPU)")
        conditions = [f"`{c['id']}`: {_cell(describe(c))}" for c in p.get("constraints", [])]
        if conditions:
            becomes += "<br>" + "<br>".join(conditions)
        evidence = _cell(p.get("evidence", ""))
        if p.get("doc"):
            evidence += f" ({link(p['doc'], base=base)})"
        if p.get("note"):
            evidence += f"<br>*Note:* {_cell(p['note'])}"
        lines.append(f"| `{p['name']}` | {becomes} | {_cell(describe_pattern_nodes(p['nodes']))} | {evidence} |")
    return lines


def find_constraints(ref: str) -> list[tuple[Profile, str, dict[str, Any]]]:
    """(profile, op key, constraint) for ``ID`` (searched in every built-in profile) or
    ``PROFILE:ID`` (a built-in name or a profile path, relative to the working directory)."""
    from npu_gate.profile.spec import load_profile
    from npu_gate.resources import builtin_profile_names

    if ":" in ref:
        name, cid = ref.rsplit(":", 1)
        profiles = [load_profile(name, where="explain")]
    else:
        cid = ref
        profiles = [load_profile(n) for n in builtin_profile_names()]
    found = []
    for profile in profiles:
        for key, spec in profile.ops.items():
            for c in spec.get("constraints", []):
                if c["id"] == cid:
                    found.append((profile, key, c))
    return found


def explain_constraint(profile: Profile, key: str, c: dict[str, Any]) -> str:
    lines = [
        f"{c['id']} (constraint of {key} in profile {profile.name}, {profile.evidence})",
        "",
        describe(c) + ".",
        "",
        "A node of this op runs on CPU when the constraint fails (rule op-constraint); the",
        "finding names the constraint id, the value seen and the value allowed.",
    ]
    if c.get("message"):
        lines += ["", f"Message: {c['message']}"]
    if c.get("doc"):
        lines += [f"Documentation: {c['doc']}"]
    note = profile.ops[key].get("note")
    if note:
        lines += ["", f"Note on {key}: {note}"]
    lines += ["", f"Source: {profile.source}"]
    lines += ["", f"To meet it, in PyTorch: {c['fix']}" if c.get("fix") else
              "To meet it, in PyTorch: the profile gives no fix for this constraint; change the value named "
              "in the finding to one the constraint allows (above)."]
    return "\n".join(lines)


def render_compiler_passes(profile: Profile) -> list[str]:
    """The ``eliminates``, ``lowers``, ``refuses``, ``standalone_qdq`` and ``splits`` sections
    (docs/target-profiles.md); none when unset."""
    lines: list[str] = []
    if profile.eliminates:
        lines += _section(f"Eliminated by the compiler ({len(profile.eliminates)})",
                          "Removed before placement (placement `eliminated`, in no partition; "
                          "docs/target-profiles.md).",
                          ["operator", "when", "evidence"],
                          [[f"`{e['op']}`", _cell(e["when"]), _cell(e["evidence"])] for e in profile.eliminates])
    if profile.lowers:
        lines += _section(f"Rewritten before placement ({len(profile.lowers)})", None,
                          ["operator", "placed as", "evidence"],
                          [[f"`{e['op']}`", f"`{e['to']}`", _cell(e["evidence"])] for e in profile.lowers])
    if profile.refuses:
        lines += _section(f"Builds the compiler refuses ({len(profile.refuses)})",
                          "Each match is a `compiler-will-refuse` error.",
                          ["id", "matches", "the compiler says", "evidence"],
                          [[f"`{r['id']}`", _cell(describe_refusal(r)), _cell(r.get("message") or "not known"),
                            _cell(r["evidence"])] for r in profile.refuses])
    if profile.standalone_qdq:
        lines += _section(f"Q/DQ nodes in no QDQ unit ({len(profile.standalone_qdq)})",
                          "A Q/DQ node onnxruntime puts in no unit (a Conv or Gemm whose bias DQ is not int32) is "
                          "placed by the first entry it matches; on CPU it is a `standalone-qdq` error "
                          "(docs/target-profiles.md).",
                          ["id", "matches", "device", "the compiler says", "evidence"],
                          [[f"`{e['id']}`", _cell(describe_standalone(e)), _cell(e["device"]),
                            _cell(e.get("message") or "not known"), _cell(e["evidence"])]
                           for e in profile.standalone_qdq])
    if profile.splits:
        lines += _section(f"Nodes the compiler splits across devices ({len(profile.splits)})",
                          "Placed on the NPU with `split` set; partitions are counted over the pieces, each a "
                          "`npu-node-split` warning (docs/target-profiles.md#splits).",
                          ["id", "operator", "split unless", "pieces", "evidence"],
                          [[f"`{e['id']}`", f"`{e['op']}`", _cell(describe_split(e)),
                            _cell(" -> ".join(f"{p['op']} ({p['device']})" for p in e["pieces"])),
                            _cell(e["evidence"])] for e in profile.splits])
    return lines


def _section(title: str, intro: str | None, header: list[str], rows: list[list[str]]) -> list[str]:
    """One compiler-pass section: a heading, an optional sentence, a table (cells already escaped)."""
    lines = ["", f"## {title}", ""]
    if intro:
        lines += [intro, ""]
    lines += ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def describe_standalone(e: dict[str, Any]) -> str:
    parts = [e.get("op", "DequantizeLinear")]
    if "weight" in e:
        parts.append("of a weight" if e["weight"] else "of an activation")
    if "per_channel" in e:
        parts.append("per channel" if e["per_channel"] else "per tensor")
    return ", ".join(parts)


def describe_split(entry: dict[str, Any]) -> str:
    """The entry's conditions in words: where it applies, and what keeps the node whole."""
    def test(c: dict[str, Any]) -> str:
        subject = f"input {c['input']}" if "input" in c else f"output {c['output']}" if "output" in c else ""
        parts = []
        if "attribute" in c:
            subject = f"attribute {c['attribute']}"
            parts += [f"in {c['in']}"] if "in" in c else []
        if "dim" in c:
            d = c["dim"]
            parts += [f"dim {d['axis']} <= {d['max']}"] if "max" in d else []
            parts += [f"dim {d['axis']} a multiple of {d['multiple_of']}"] if "multiple_of" in d else []
        if c.get("constant"):
            parts.append("constant")
        if "rank" in c:
            parts.append(f"rank {c['rank'].get('min', '')}..{c['rank'].get('max', '')}")
        return f"{subject} {' and '.join(parts)}".strip()

    whole = "; ".join(" or ".join(test(a) for a in c["any_of"]) if "any_of" in c else test(c)
                      for c in entry["constraints"])
    where = [test(c) for c in entry.get("where", [])]
    context = entry.get("context") or {}
    if "producers" in context:
        made = context["producers"]
        merged = f" merging the last {made['merges_last_dims']} dims" if "merges_last_dims" in made else ""
        where.append(f"every input from a {made['op']}{merged} (at least {made.get('min_count', 1)})")
    if "readers" in context:
        where.append(f"read only by {' or '.join(context['readers'])}")
    return whole + (f" (applies where {'; '.join(where)})" if where else "")


def describe_refusal(r: dict[str, Any]) -> str:
    if "graph" in r:
        return f"graph: {r['graph']}" + (f" {r['max']}" if "max" in r else "")
    parts = [f"op {r['op']}"]
    if "opset_max" in r:
        parts.append(f"opset <= {r['opset_max']}")
    if "min_outputs" in r:
        parts.append(f">= {r['min_outputs']} outputs")
    if "attribute" in r:
        parts.append(f"{r['attribute']['name']} in {words_set(r['attribute']['in'])}")
    return ", ".join(parts)


def render_rank_adapters(rule: dict[str, Any], base: FileRefs | None = None) -> list[str]:
    when = rule.get("npu_when")
    where = "on CPU"
    if when:
        where = f"on the NPU when dim {when['axis']} is static"
        if when.get("multiple_of"):
            where += f" and a multiple of {when['multiple_of']}"
        where += ", else on CPU (`rank-adapter` warning)"
    lines = ["## Rank adapters", "",
             f"The target computes in rank {rule['rank']}: every graph input and output of another rank "
             f"gets a `{rule.get('op', 'Reshape')}` adapter, {where}.", ""]
    if rule.get("evidence"):
        lines.append(f"- evidence: {_cell(rule['evidence'])}")
    if rule.get("note"):
        lines.append(f"- *Note:* {_cell(rule['note'])}")
    if rule.get("doc"):
        lines.append(f"- source: {link(rule['doc'], base=base)}")
    return lines

"""A rule's documentation in fixed sections (docs/rules.md and `npu-gate explain` print them)."""

from __future__ import annotations

from dataclasses import dataclass

# The sections every rule's doc has, in order, with their headings.
SECTIONS = (
    ("finds", "What it finds"),
    ("why", "Why it matters on an NPU"),
    ("example", "Example (PyTorch)"),
    ("fix", "Fix"),
    ("evidence", "Evidence"),
    ("fields", "JSON fields"),
)


@dataclass(frozen=True)
class RuleDoc:
    """The doc of the rule ``rule`` (an id of ``npu_gate.rules.RULES``), one text per section.

    ``example`` is Python source (shown as a code block); the others are Markdown prose. A
    section with nothing honest to say says so in a sentence."""

    rule: str
    finds: str
    why: str
    example: str
    fix: str
    evidence: str
    fields: str

    def sections(self) -> list[tuple[str, str]]:
        """(heading, Markdown) per section, in order."""
        out = []
        for key, heading in SECTIONS:
            text = getattr(self, key).strip()
            if key == "example" and not text.startswith("None"):
                text = f"```python\n{text}\n```"
            out.append((heading, text))
        return out

    def markdown(self, level: int = 3) -> str:
        """The sections as Markdown, each under a heading of ``level``."""
        marks = "#" * level
        return "\n\n".join(f"{marks} {heading}\n\n{text}" for heading, text in self.sections())

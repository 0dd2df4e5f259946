"""Each rule's doc and the code that builds its findings, side by side, one module per family.

``npu_gate.rules`` (the bottom layer) keeps what every layer needs: the ids, default severities,
one-line summaries and the placement flag. Here, per rule: its doc in fixed sections
(``doc.RuleDoc``) and its message and fix builders. ``catalog`` gathers the docs (``npu-gate
rules``, ``explain``, docs/rules.md); ``collect.analysis_findings`` makes an analysis' findings.
Stages call the builders; none of them writes a rule's message itself.
"""

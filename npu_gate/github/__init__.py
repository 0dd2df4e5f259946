"""GitHub delivery: workflow commands, step outputs, job summary and the sticky PR comment.

Stdlib only, so the comment step can run without installing npu_gate's dependencies.
"""

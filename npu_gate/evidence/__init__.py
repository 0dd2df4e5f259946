"""The evidence a run keeps: the bundle folder, minimal failing models, and reduce (shrinking a
model while an external command keeps failing).
"""

"""The constraint vocabulary of a profile op entry, one module per kind of check.

A constraint (schemas/profile.schema.json, ``$defs.constraint``) is parsed once
(``registry.parse``) into a typed ``constraint.Constraint``: its subject (an attribute,
an input or an output) and one check object per kind of test it states (``bounds``,
``dtype``, ``dim``, ``value``...), or a form that replaces the subject (``any_of``,
``unchecked``). Every check knows how to ``evaluate`` itself on a node, ``describe``
itself in words (the profile pages and ``npu-gate explain``) and name its ``problems``
(``npu-gate profile check``). ``registry.CHECKS`` maps each key to its check.

A new kind of check is one module here, listed in ``registry.CHECKS``, plus its entry in
the schema (``tests/profile/test_check_registry.py`` holds the two to the same keys).
A check that depends on the build (its precision, say) reads it from ``base.Context``.
"""

"""A target: its profile (ops, constraints, limits, patterns, rank adapters), the ONNX vocabulary
profiles are written in, the real compilers it can be asked through, and its generated pages.
"""

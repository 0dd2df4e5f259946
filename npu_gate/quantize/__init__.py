"""Quantization of the float graph and what it costs: onnxruntime's static quantization (QDQ),
the calibration and hold-out samples, output and per-layer accuracy (docs/quantization.md)."""

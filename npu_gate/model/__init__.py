"""The model as PyTorch gives it: building the factory's module, exporting it to ONNX, capturing
what user code prints, seeded samples, numerics against onnxruntime.
"""

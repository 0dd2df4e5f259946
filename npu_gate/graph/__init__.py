"""The ONNX graph and what is known of it: the file (external data), facts per node and tensor,
folding, sub-models, layouts, shape values, shape chains, symbolic dims.
"""

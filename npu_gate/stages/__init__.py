"""The gate's stages, one module each; ``npu_gate.pipeline`` calls them in order.

A stage takes what it needs (the model, the settings, the gate's own placement) and fills
its part of the result. No stage imports the orchestrator.
"""

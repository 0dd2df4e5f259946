"""The declared input contract (npu-gate.json): reading, schema and semantic validation, with
every problem named by file and JSON path before any model runs.
"""

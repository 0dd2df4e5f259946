"""The result of a run: plain typed data every layer above writes or reads (findings, nodes,
partitions, probe results), and reading a result JSON back.
"""

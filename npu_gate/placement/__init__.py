"""Where each node runs under a profile (npu, cpu, folded, with every failed constraint), fusion
patterns, rank adapters, and the partitions and boundary bytes that follow.
"""

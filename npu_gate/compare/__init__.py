"""Results side by side: the diff of two results, the baseline ratchet, merged documents, and the
verdict several contracts add up to.
"""

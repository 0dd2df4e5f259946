"""Weakly connected components of some of a graph's nodes (union-find): partitions split a
device segment into them, minimal models group dynamic-shape nodes into chains with them."""

from __future__ import annotations

from collections.abc import Iterable


def components(nodes: Iterable[int], edges: Iterable[tuple[int, int]]) -> list[list[int]]:
    """``nodes`` grouped by the ``edges`` joining them (an edge with an end outside ``nodes``
    joins nothing): each group in ``nodes`` order, the groups ordered by their first node."""
    order = list(nodes)
    if len(order) == 1:
        return [order]
    parent = {i: i for i in order}

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for a, b in edges:
        if a in parent and b in parent:
            ra, rb = find(a), find(b)
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)
    groups: dict[int, list[int]] = {}
    for i in order:  # dicts keep insertion order: groups come out ordered by first node
        groups.setdefault(find(i), []).append(i)
    return list(groups.values())

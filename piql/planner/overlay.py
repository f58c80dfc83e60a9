"""EAGr's aggregation overlay (Mondal and Deshpande, SIGMOD 2014, §3): pure construction.

An ego-centric aggregate (a COUNT or SUM over the users I follow) is a bipartite graph
from writers (producers) to readers (consumers). Readers sharing a set of writers can
share one **partial aggregate** node: it sums those writers once, and each reader reads
(or is pushed) one value instead of many. EAGr measures an overlay by its **sharing
index**, 1 - (edges of the overlay) / (edges of the bipartite graph).

:func:`build` is EAGr's VNM-style greedy (§3.2.1, after Buehrer et al.'s virtual node
mining, itself an FP-tree): readers are ordered by a shingle of their writers and cut
into chunks; in each chunk an FP-tree of the readers' remaining writers (most frequent
first) is built and the path with the largest benefit L·|S| - L - |S| (L writers shared
by |S| readers: the edges a partial aggregate removes) becomes a node; rounds repeat until
no path removes an edge. The overlay is one level (writers -> partial aggregates ->
readers), every writer reaches each of its readers by exactly one path (COUNT and SUM are
duplicate-sensitive; no negative edges).

Pure: neighbourhoods in, a frozen overlay out. The push/pull decision per node is
``push_pull.partition`` (§4.4); the runtime (``runtime.aggregates``) keeps the overlay
under edge inserts and deletes (§3.3) and serves it.
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Hashable, Iterable, Mapping

Node = Hashable
CHUNK = 64  # readers per FP-tree (VNM's grouping keeps each tree small)
SEEDS = 8  # writer pairs each round grows bicliques from (``_seeded``)


@dataclass(frozen=True)
class Shared:
    """One partial aggregate node: the writers it sums."""

    number: int
    writers: frozenset[Node]


@dataclass(frozen=True)
class OverlayGraph:
    """Per reader: the partial aggregates it reads and the writers it reads directly."""

    shared: tuple[Shared, ...]
    readers: tuple[tuple[Node, tuple[int, ...], frozenset[Node]], ...]
    bipartite_edges: int

    @property
    def edges(self) -> int:
        """Edges of the overlay: writers into partial aggregates, inputs into readers."""
        return sum(len(s.writers) for s in self.shared) + sum(
            len(numbers) + len(direct) for _, numbers, direct in self.readers)

    @property
    def sharing_index(self) -> float:
        return 1 - self.edges / self.bipartite_edges if self.bipartite_edges else 0.0


def build(neighbourhoods: Mapping[Node, Iterable[Node]], sharing: bool = True,
          chunk: int = CHUNK) -> OverlayGraph:
    """The overlay of ``neighbourhoods`` (reader -> its writers); without ``sharing``
    every writer feeds its readers directly (the bipartite graph itself)."""
    remaining = {r: set(ws) for r, ws in neighbourhoods.items()}
    total = sum(len(ws) for ws in remaining.values())
    feeds: dict[Node, list[int]] = {r: [] for r in remaining}
    shared: list[Shared] = []
    while sharing:
        found = _best_biclique(remaining, chunk)
        if found is None:
            break
        writers, readers = found
        node = Shared(len(shared), frozenset(writers))
        shared.append(node)
        for reader in readers:
            remaining[reader] -= node.writers
            feeds[reader].append(node.number)
    return OverlayGraph(tuple(shared), tuple(
        (r, tuple(feeds[r]), frozenset(remaining[r])) for r in sorted(remaining, key=repr)),
        total)


def _shingle(writers: Iterable[Node]) -> int:
    """A min-hash of a reader's writers: similar neighbourhoods tend to share it."""
    return min((zlib.crc32(repr(w).encode()) for w in writers), default=0)


def _best_biclique(remaining: dict[Node, set[Node]],
                   chunk: int) -> tuple[list[Node], list[Node]] | None:
    """The FP-tree path of largest benefit over every chunk of readers, or None."""
    frequency: dict[Node, int] = {}
    for writers in remaining.values():
        for w in writers:
            frequency[w] = frequency.get(w, 0) + 1
    order = sorted((r for r, ws in remaining.items() if len(ws) >= 2),
                   key=lambda r: (_shingle(remaining[r]), repr(r)))
    best: tuple[int, list[Node], list[Node]] | None = _seeded(remaining, frequency)
    for start in range(0, len(order), chunk):
        found = _mine(order[start:start + chunk], remaining, frequency)
        if found is not None and (best is None or found[0] > best[0]):
            best = found
    return None if best is None or best[0] <= 0 else (best[1], best[2])


def _benefit(writers: int, readers: int) -> int:
    """The edges a partial aggregate of ``writers`` shared by ``readers`` removes."""
    return writers * readers - writers - readers


def _seeded(remaining: dict[Node, set[Node]], frequency: dict[Node, int],
            seeds: int = SEEDS) -> tuple[int, list[Node], list[Node]] | None:
    """Bicliques grown from the writer pairs most readers share (the FP-tree's paths
    miss them when each reader's most frequent writers differ, as in a community whose
    members also follow a few popular users outside it): from each of the ``seeds``
    most shared pairs, add the writer that most raises the benefit, keeping the readers
    that have it, while the benefit grows. The best found, or None."""
    pairs: dict[tuple[Node, Node], int] = {}
    for writers in remaining.values():
        items = sorted((w for w in writers if frequency[w] >= 2), key=repr)
        for i, first in enumerate(items):
            for second in items[i + 1:]:
                pairs[(first, second)] = pairs.get((first, second), 0) + 1
    ranked = sorted(((n, pair) for pair, n in pairs.items() if n >= 2),
                    key=lambda found: (-found[0], repr(found[1])))[:seeds]
    best = None
    for _, (first, second) in ranked:
        writers = [first, second]
        readers = [r for r, ws in remaining.items() if first in ws and second in ws]
        benefit = _benefit(2, len(readers))
        while True:
            counts: dict[Node, int] = {}
            for reader in readers:
                for w in remaining[reader]:
                    if w not in writers:
                        counts[w] = counts.get(w, 0) + 1
            step = max(((_benefit(len(writers) + 1, n), repr(w), w) for w, n in counts.items()),
                       default=None, key=lambda c: (c[0], c[1]))
            if step is None or step[0] <= benefit:
                break
            benefit, added = step[0], step[2]
            writers.append(added)
            readers = [r for r in readers if added in remaining[r]]
        if best is None or benefit > best[0]:
            best = (benefit, writers, readers)
    return best


def _mine(readers: list[Node], remaining: dict[Node, set[Node]],
          frequency: dict[Node, int]) -> tuple[int, list[Node], list[Node]] | None:
    """One FP-tree: each reader's shared writers, most frequent first, as a path from the
    root; a tree node's support is the readers through it. The best node by benefit."""
    root: dict = {}
    nodes: list[tuple[int, list[Node], list[Node]]] = []  # (depth, path, support)
    index: dict[int, int] = {}
    local: dict[Node, int] = {}  # in this chunk: its readers' shared writers come first
    for reader in readers:
        for w in remaining[reader]:
            local[w] = local.get(w, 0) + 1
    for reader in readers:
        items = sorted((w for w in remaining[reader] if local[w] >= 2),
                       key=lambda w: (-local[w], -frequency[w], repr(w)))
        level, path = root, []
        for writer in items:
            path.append(writer)
            if writer not in level:
                level[writer] = {}
                index[id(level[writer])] = len(nodes)
                nodes.append((len(path), list(path), []))
            level = level[writer]
            nodes[index[id(level)]][2].append(reader)
    best = None
    for depth, path, support in nodes:
        benefit = depth * len(support) - depth - len(support)
        if len(support) >= 2 and depth >= 2 and (best is None or benefit > best[0]):
            best = (benefit, path, support)
    return best

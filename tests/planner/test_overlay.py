"""EAGr's aggregation overlay (planner.overlay): readers sharing writers get one partial
aggregate node; every writer reaches each of its readers by exactly one path."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from piql.planner.overlay import build


def test_readers_sharing_writers_share_one_partial_aggregate():
    """Three readers all follow a, b, c (a 3x3 biclique: 9 edges become 3 + 3, benefit 3);
    r3 and r4 also follow d. Overlay: 3 (into the node) + 3 (out of it) + 2 (d) = 8 edges
    for 11: sharing index 3/11."""
    neighbourhoods = {"r1": "abc", "r2": "abc", "r3": "abcd", "r4": "d"}
    overlay = build({r: set(ws) for r, ws in neighbourhoods.items()})
    (shared,) = overlay.shared
    assert shared.writers == frozenset("abc")
    assert {r: (numbers, direct) for r, numbers, direct in overlay.readers} == {
        "r1": ((0,), frozenset()), "r2": ((0,), frozenset()), "r3": ((0,), frozenset("d")),
        "r4": ((), frozenset("d"))}
    assert overlay.bipartite_edges == 11 and overlay.edges == 8
    assert abs(overlay.sharing_index - 3 / 11) < 1e-12


def test_without_sharing_the_overlay_is_the_bipartite_graph():
    overlay = build({"r1": {"a", "b"}, "r2": {"a", "b"}}, sharing=False)
    assert overlay.shared == () and overlay.sharing_index == 0


def test_a_pair_of_readers_sharing_two_writers_gains_nothing():
    """2 writers x 2 readers: 4 edges either way (benefit 2·2 - 2 - 2 = 0): no node."""
    assert build({"r1": {"a", "b"}, "r2": {"a", "b"}}).shared == ()


@settings(max_examples=80, deadline=None)
@given(st.dictionaries(st.integers(0, 12), st.sets(st.integers(0, 8), max_size=7), max_size=12))
def test_every_reader_aggregates_exactly_its_writers_once(neighbourhoods):
    overlay = build(neighbourhoods, chunk=4)
    members = {s.number: s.writers for s in overlay.shared}
    for reader, numbers, direct in overlay.readers:
        parts = [members[n] for n in numbers] + [direct]
        assert sum(len(p) for p in parts) == len(neighbourhoods[reader])  # no writer twice
        assert frozenset().union(*parts) == frozenset(neighbourhoods[reader])
    assert overlay.edges <= overlay.bipartite_edges


def test_communities_share_one_partial_aggregate_each():
    """Readers 1-4 follow a1, a2, a3 and one outsider each; readers 5-7 follow b1, b2.
    Bipartite: 4 x 4 + 3 x 2 = 22 edges. A node for {a1, a2, a3} removes 3·4 - 3 - 4 = 5
    edges, one for {b1, b2} 2·3 - 2 - 3 = 1: 16 edges, sharing index 6/22."""
    neighbourhoods = {r: {"a1", "a2", "a3", f"o{r}"} for r in range(1, 5)} | {
        r: {"b1", "b2"} for r in range(5, 8)}
    graph = build(neighbourhoods)
    assert {s.writers for s in graph.shared} == {frozenset({"a1", "a2", "a3"}),
                                                 frozenset({"b1", "b2"})}
    assert graph.bipartite_edges == 22 and graph.edges == 16
    assert graph.sharing_index == pytest.approx(6 / 22)

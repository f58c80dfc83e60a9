"""Push/pull decisions from rates (planner.push_pull): Feeding Frenzy's MinCost and its
latency-constrained greedy, the push cap per producer, and EAGr's min-cut partition of an
aggregation overlay, against hand-computed cases and brute force."""
from __future__ import annotations

from itertools import combinations, product

import pytest
from hypothesis import example, given, settings, strategies as st

from piql.planner.push_pull import (
    Costs, Decision, Edge, NodeCost, Rates, assign, consistent, frequencies, guarded,
    latency_constrained, min_cost, min_cost_feeds, node_costs, partition, partition_cost,
    prefers_push, read_ops, read_percentile, with_feed_reads,
)


def test_lemma_1_pushes_an_edge_iff_reads_over_writes_reach_h_over_l():
    """Feeding Frenzy §3.2.1, Lemma 1 with H = 1, L = 2 (threshold H/L = 1/2): a consumer
    reading once per producer event pushes; one reading a quarter as often as its producer
    writes pulls; exactly at the threshold the rule says push (>=)."""
    costs = Costs(push=1, pull=2)
    assert prefers_push(producer_rate=1, consumer_rate=1, costs=costs)
    assert not prefers_push(producer_rate=4, consumer_rate=1, costs=costs)
    assert prefers_push(producer_rate=2, consumer_rate=1, costs=costs)
    assert prefers_push(producer_rate=0, consumer_rate=0, costs=costs)  # costs nothing


def test_min_cost_decides_each_edge_alone_and_beats_both_extremes():
    """Theorem 1 (§3.2.3) on three edges, H = 1, L = 2: (p1, c1) push costs phi_p·H = 1
    (pull 2); (p2, c1) pull costs phi_c·L = 2 (push 4); (p3, c2) push 2 (pull 2).
    MinCost = 5; all-push = 1 + 4 + 2 = 7; all-pull = 2 + 2 + 2 = 6."""
    costs = Costs(push=1, pull=2)
    rates = Rates.of({"p1": 1, "p2": 4, "p3": 2}, {"c1": 1, "c2": 1})
    edges = [Edge("p1", "c1"), Edge("p2", "c1"), Edge("p3", "c2")]
    best = min_cost(edges, rates, costs)
    assert best.push == {Edge("p1", "c1"), Edge("p3", "c2")}
    assert best.pull == {Edge("p2", "c1")}
    assert best.decision(Edge("p2", "c1")) == Decision.PULL
    assert best.cost == 5
    assert assign(edges, edges, rates, costs).cost == 7
    assert assign(edges, [], rates, costs).cost == 6


def test_the_cap_keeps_a_producers_most_frequent_readers_on_push():
    """A celebrity with three push-worthy followers and a cap of 2 push edges per producer
    (a write then maintains at most two views): the two most frequent readers stay push."""
    costs = Costs(push=1, pull=1)
    rates = Rates.of({"star": 1}, {"a": 5, "b": 3, "c": 9})
    edges = [Edge("star", c) for c in "abc"]
    best = min_cost(edges, rates, costs, cap=2)
    assert best.push == {Edge("star", "c"), Edge("star", "a")}
    assert best.cost == 1 + 1 + 3  # two pushes, b's reads pull
    assert min_cost(edges, rates, costs, cap=0).push == frozenset()


def test_latency_constrained_shifts_pull_edges_by_rate_over_extra_cost():
    """§3.3.1: c reads once per unit time and follows p1, p2 (5 events each) and p3 (10).
    With H = L = 1 MinCost pulls all three: a read costs 3. For a budget of 2 per read
    (reading pushed events costs 1), the greedy shifts the edges with the largest
    phi_c/epsilon first: epsilon = 5 - 1 = 4 for p1 and p2, 10 - 1 = 9 for p3; after p1
    and p2 a read costs 1 pull + 1 = 2. Cost: 5 + 5 pushed + 1 pulled = 11."""
    costs = Costs(push=1, pull=1, read_push=1)
    rates = Rates.of({"p1": 5, "p2": 5, "p3": 10}, {"c": 1})
    edges = [Edge(p, "c") for p in ("p1", "p2", "p3")]
    assert min_cost(edges, rates, costs).push == frozenset()
    result = latency_constrained(edges, rates, costs, budget=2)
    assert result.met and result.read_cost == 2
    assert result.assignment.push == {Edge("p1", "c"), Edge("p2", "c")}
    assert result.assignment.cost == 11
    # when the budget is slack, the lowest-ranked extra push edges go back to pull (p3 first)
    slack = latency_constrained(edges, rates, costs, budget=2,
                                start=assign(edges, edges, rates, costs))
    assert slack.assignment.push == {Edge("p1", "c"), Edge("p2", "c")}
    # a budget below any read (reading pushed events alone costs 1) is reported unmet,
    # and no edge is pushed for it: no push could bring the read within it
    tight = latency_constrained(edges, rates, costs, budget=0.5)
    assert not tight.met and tight.read_cost == 3 and tight.assignment.push == frozenset()
    # at budget 1 every edge is pushed: a read then costs read_push = 1
    exact = latency_constrained(edges, rates, costs, budget=1)
    assert exact.met and exact.read_cost == 1 and exact.assignment.pull == frozenset()


def test_latency_constrained_budgets_measured_reads_through_offsets():
    """The budget is in measured ops: each consumer's measured reads beyond the model
    (its edge rows, say) come in as an offset. Costs H = 1, L = 10 (one producer's k = 10
    rows), read_push = 11 (a state row and 10 feed rows). c reads 1/tick and follows p1,
    p2 (writing 20/tick each: MinCost pulls, 20 > 1·10); d reads 1/tick and follows p3
    (writing 30). Offsets: c's reads cost 2 more (2 edge rows), d's 40 more (a slow edge
    scan, say). Budget 15: c's read 2·10 + 2 = 22 > 15; one edge pushed gives 10 + 11 + 2
    = 23, both 11 + 2 = 13 <= 15, so both go push. d's read is 10 + 40 = 50, and pushing
    cannot go below 11 + 40 = 51 > 15: d keeps its pull edge. The p50 (weight 1 each)
    is c's 13: met; the p100 is d's 50: not met."""
    costs = Costs(push=1, pull=10, read_push=11)
    rates = Rates.of({"p1": 20, "p2": 20, "p3": 30}, {"c": 1, "d": 1})
    edges = [Edge("p1", "c"), Edge("p2", "c"), Edge("p3", "d")]
    offsets = {"c": 2, "d": 40}
    half = latency_constrained(edges, rates, costs, budget=15, percentile=0.5,
                               offsets=offsets)
    assert half.met and half.read_cost == 13
    assert half.assignment.push == {Edge("p1", "c"), Edge("p2", "c")}
    every = latency_constrained(edges, rates, costs, budget=15, offsets=offsets)
    assert not every.met and every.read_cost == 50
    assert every.assignment.push == {Edge("p1", "c"), Edge("p2", "c")}
    # without offsets the model thinks c's 20 within budget 21; with them it is 22 > 21
    assert latency_constrained(edges, rates, costs, budget=21, percentile=0.5
                               ).assignment.push == frozenset()
    assert latency_constrained(edges, rates, costs, budget=21, percentile=0.5,
                               offsets=offsets).assignment.push == {Edge("p1", "c"),
                                                                   Edge("p2", "c")}
    assert read_percentile(half.assignment, rates, costs, 1.0, offsets) == 50


def test_overlay_frequencies_flow_downstream_and_upstream():
    """EAGr §4.1: writers a (2 writes) and b (3) feed partial aggregate i, which feeds
    readers x (1 read) and y (4); b also feeds y directly. Push frequencies sum inputs
    (i = 5, x = 5, y = 5 + 3 = 8), pull frequencies sum outputs (i = 5, a = 5, b = 5 + 4 =
    9). For SUM, H(k) = 1 and L(k) = k (§4.2): PULL(i) = 5·2 = 10, PUSH(y) = 8."""
    edges = [("a", "i"), ("b", "i"), ("i", "x"), ("i", "y"), ("b", "y")]
    found = frequencies(edges, {"a": 2, "b": 3}, {"x": 1, "y": 4})
    assert found == {"a": (2, 5), "b": (3, 9), "i": (5, 5), "x": (5, 1), "y": (8, 4)}
    costs = node_costs(edges, {"a": 2, "b": 3}, {"x": 1, "y": 4}, lambda k: 1, lambda k: k)
    assert costs["i"] == NodeCost(push=5, pull=10)
    assert costs["y"] == NodeCost(push=8, pull=8)
    assert costs["x"] == NodeCost(push=5, pull=1)


def test_min_cut_resolves_the_conflict_of_figure_5():
    """EAGr §4.4, Figure 5(iii)'s highlighted path: alone, i3 prefers pull (PULL 6 < PUSH
    10) and s_r push (PUSH 70 < PULL 2·60 = 120), but a pull i3 would force a pull s_r.
    Both push costs 80, both pull 126, i3 push and s_r pull 130: both push. Writer a_w
    (PUSH 3 < PULL 10, §4.5) is push."""
    costs = {"a_w": NodeCost(3, 10), "i3": NodeCost(10, 6), "s_r": NodeCost(70, 120)}
    edges = [("a_w", "i3"), ("i3", "s_r")]
    found = partition(costs, edges)
    assert found.push == {"a_w", "i3", "s_r"} and found.cost == 83
    # with a cheap read at s_r, pulling from i3 on is cheapest: 3 + 6 + 50
    cheap = dict(costs, s_r=NodeCost(70, 50))
    found = partition(cheap, edges)
    assert (found.push, found.pull, found.cost) == ({"a_w"}, {"i3", "s_r"}, 59)
    assert found.decision("i3") == Decision.PULL


def test_writers_can_be_kept_push_and_then_so_is_everything_upstream():
    """EAGr §2.2.1: writer nodes are always push. Forcing a node push forces its inputs
    push too (no pull node feeds a push node): in the cheap-read case above, keeping i3
    push costs 3 + 10 + 50 = 63."""
    costs = {"a_w": NodeCost(3, 1), "i3": NodeCost(10, 6), "s_r": NodeCost(70, 50)}
    edges = [("a_w", "i3"), ("i3", "s_r")]
    assert partition(costs, edges).push == frozenset()  # a_w alone would rather pull
    assert partition(costs, edges, must_push=["a_w"]).push == {"a_w"}
    forced = partition(costs, edges, must_push=["i3"])
    assert (forced.push, forced.cost) == ({"a_w", "i3"}, 63)


def test_a_cyclic_overlay_is_refused():
    with pytest.raises(ValueError, match="acyclic"):
        partition({"a": NodeCost(1, 1), "b": NodeCost(1, 1)}, [("a", "b"), ("b", "a")])


# -- properties on random rates ----------------------------------------------------------

rate = st.floats(min_value=0, max_value=100, allow_nan=False)
positive = st.floats(min_value=0.01, max_value=100, allow_nan=False)


@st.composite
def workloads(draw):
    producers = draw(st.integers(1, 4))
    consumers = draw(st.integers(1, 4))
    pairs = [(p, c) for p in range(producers) for c in range(consumers)]
    chosen = draw(st.lists(st.sampled_from(pairs), min_size=1, max_size=8, unique=True))
    edges = [Edge(f"p{p}", f"c{c}") for p, c in chosen]
    rates = Rates.of({f"p{p}": draw(rate) for p in range(producers)},
                     {f"c{c}": draw(rate) for c in range(consumers)})
    return edges, rates, Costs(draw(positive), draw(positive), draw(rate))


@settings(max_examples=150, deadline=None)
@given(workloads())
def test_min_cost_is_no_worse_than_all_push_or_all_pull_and_is_optimal(workload):
    edges, rates, costs = workload
    best = min_cost(edges, rates, costs)
    assert best.cost <= assign(edges, edges, rates, costs).cost + 1e-9
    assert best.cost <= assign(edges, [], rates, costs).cost + 1e-9
    optimum = min(assign(edges, [e for e, push in zip(edges, mask) if push], rates, costs).cost
                  for mask in product((False, True), repeat=len(edges)))
    assert best.cost == pytest.approx(optimum)  # Theorem 1: local decisions are optimal


def test_a_consumer_pushes_only_when_its_savings_cover_reading_its_feed():
    """H = 1, L = 10, reading the pushed feed costs 12 per read: c1 (1 read) saves 10 - 1 =
    9 on p1's edge, less than 12, so it pulls; c2 saves 9 on each of two edges: 18 > 12."""
    costs = Costs(push=1, pull=10, read_push=12)
    rates = Rates.of({"p1": 1, "p2": 1}, {"c1": 1, "c2": 1})
    edges = [Edge("p1", "c1"), Edge("p1", "c2"), Edge("p2", "c2")]
    assert min_cost(edges, rates, costs).push == frozenset(edges)  # Lemma 1 alone
    best = min_cost_feeds(edges, rates, costs)
    assert best.push == {Edge("p1", "c2"), Edge("p2", "c2")}
    assert with_feed_reads(best, rates, costs) == 10 + 1 + 1 + 12


def test_the_guard_keeps_the_extreme_when_the_hybrid_saves_less_than_its_error():
    """H = L = 1, no feed read cost. c reads 100 times, p1 writes 10, p2 2: MinCost
    pushes both (cost 12 = all-push). Add (p3, d): d reads 1, p3 writes 3, so the hybrid
    pulls it (1 instead of 3): cost 13 against all-push's 15, a saving of 2. Unit 0.5 (one
    event, rate 0.5): var = (H² · max(3, .5) + L² · max(1, .5)) · .5 = 2, error 1.41:
    2 > 2 · 1.41 fails, all-push is kept. Unit 0.01: error 0.2, the hybrid stands. A
    margin of 20 % (3 of 15) keeps all-push too."""
    costs = Costs(push=1, pull=1)
    rates = Rates.of({"p1": 10, "p2": 2, "p3": 3}, {"c": 100, "d": 1})
    edges = [Edge("p1", "c"), Edge("p2", "c"), Edge("p3", "d")]
    hybrid = min_cost_feeds(edges, rates, costs)
    assert hybrid.pull == {Edge("p3", "d")} and hybrid.cost == 13
    kept = guarded(edges, hybrid, edges, rates, costs, unit=0.5)
    assert (kept.chosen, kept.assignment.push, kept.saving) == ("push", frozenset(edges), 2)
    assert kept.error == pytest.approx(2 ** 0.5)
    assert guarded(edges, hybrid, edges, rates, costs, unit=0.01).chosen == "hybrid"
    assert guarded(edges, hybrid, edges, rates, costs, margin=0.2).chosen == "push"


def test_consumers_never_seen_share_one_event_of_error():
    """H = 1, L = 100, unit 1. r reads 1000 times and follows p (10 writes), as do 100
    consumers never seen reading. All-push costs 101 x 10 = 1010, all-pull 1000 x 100;
    MinCost pushes r's edge only (1000 x 100 >= 10): 10, a saving of 1000 over all-push.
    Its error: p's 10 events (coefficient 100: var 100 000) and the 100 unseen readers,
    who together were seen 0 times: one event between them (coefficient 100: var
    10 000), not one each (var 1 000 000, which would keep all-push)."""
    costs = Costs(push=1, pull=100)
    unseen = [f"c{n}" for n in range(100)]
    rates = Rates.of({"p": 10}, {"r": 1000} | {c: 0 for c in unseen})
    edges = [Edge("p", "r")] + [Edge("p", c) for c in unseen]
    hybrid = min_cost_feeds(edges, rates, costs)
    assert hybrid.push == {Edge("p", "r")}
    choice = guarded(edges, hybrid, edges, rates, costs, unit=1)
    assert (choice.chosen, choice.saving) == ("hybrid", 1000)
    assert choice.error == pytest.approx(110_000 ** 0.5)


def test_the_latency_budget_holds_with_confidence_over_rare_readers():
    """p90, budget 5, H = 1, L = 10, reading a pushed feed 1. a (95 reads) reads its pushed
    feed: 1. b (5 reads) pulls p (60 writes: MinCost pulls it), 10 per read. By estimate b's
    reads are 5 % of all, within the 10 % allowed: nothing moves. Counted in events of rate
    2, b's over-budget weight is 5 + 2·sqrt(5·2) = 11.3 > 10: (p, b) moves to push."""
    costs = Costs(push=1, pull=10, read_push=1)
    rates = Rates.of({"p": 60, "q": 0}, {"a": 95, "b": 5})
    edges = [Edge("q", "a"), Edge("p", "b")]
    plain = latency_constrained(edges, rates, costs, budget=5, percentile=0.9)
    assert plain.met and plain.assignment.push == {Edge("q", "a")}
    sure = latency_constrained(edges, rates, costs, budget=5, percentile=0.9, unit=2)
    assert sure.met and sure.assignment.push == frozenset(edges)
    assert not latency_constrained([Edge("p", "b")], rates, costs, budget=0.5,
                                   percentile=0.9, unit=2).met  # b alone: never within


def test_the_latency_budget_holds_for_each_unseen_consumer_on_its_own():
    """p99, budget 2, H = L = read_push = 1. a (99 reads) follows q (never writes): pushed
    by MinCost, a read costs 1. u was never seen reading (a Good-Turing guess of 0.5) and
    follows p1, p2, p3 (1, 5 and 10 writes): MinCost pulls all three (0.5 < phi_p), a
    read costs 3. By estimate u's reads are 0.5 % of all, within the 1 % allowed: the
    greedy moves nothing. Held on its own, u's edges go push by phi_c / epsilon
    (epsilon = phi_p - 0.5: p1 first, then p2) until its read fits: 1 pull + 1 = 2.
    Cost 0 + 1 + 5 pushed + 0.5 pulled. From all-push, the slack phase pulls p3 back
    but not p2 (u's read would be 3 again)."""
    costs = Costs(push=1, pull=1, read_push=1)
    rates = Rates.of({"q": 0, "p1": 1, "p2": 5, "p3": 10}, {"a": 99, "u": 0.5})
    edges = [Edge("q", "a")] + [Edge(p, "u") for p in ("p1", "p2", "p3")]
    plain = latency_constrained(edges, rates, costs, budget=2, percentile=0.99)
    assert plain.met and plain.assignment.push == {Edge("q", "a")}
    held = latency_constrained(edges, rates, costs, budget=2, percentile=0.99,
                               unseen={"u"})
    assert held.met and held.assignment.cost == 6.5
    assert held.assignment.push == {Edge("q", "a"), Edge("p1", "u"), Edge("p2", "u")}
    assert read_ops("u", held.assignment, costs) == 2
    slack = latency_constrained(edges, rates, costs, budget=2, percentile=0.99,
                                unseen={"u"}, start=assign(edges, edges, rates, costs))
    assert slack.assignment.push == held.assignment.push
    # a (reading often) pushes p1 and p2 too, and the cap of 1 leaves u only p3: no use
    # (2 pulls + 1 > 2), so u is left to the percentile and nothing of it is pushed
    wider = edges + [Edge("p1", "a"), Edge("p2", "a")]
    capped = latency_constrained(wider, rates, costs, budget=2, percentile=0.99,
                                 unseen={"u"}, cap=1)
    assert capped.met and capped.assignment.push == {
        Edge("q", "a"), Edge("p1", "a"), Edge("p2", "a")}


@settings(max_examples=150, deadline=None)
@given(workloads(), st.floats(0, 1, allow_nan=False), st.floats(0, 0.5, allow_nan=False))
def test_the_guarded_choice_never_costs_more_than_either_extreme(workload, unit, margin):
    """Whatever the rates, margin and error, the guarded assignment's estimated cost is at
    most the cheaper extreme's, and it is one of the three candidates."""
    edges, rates, costs = workload
    hybrid = min_cost_feeds(edges, rates, costs)
    choice = guarded(edges, hybrid, edges, rates, costs, margin, unit)
    cost = with_feed_reads(choice.assignment, rates, costs)
    for extreme in (edges, []):
        assert cost <= with_feed_reads(assign(edges, extreme, rates, costs), rates,
                                       costs) + 1e-9
    assert choice.assignment.push in (hybrid.push, frozenset(edges), frozenset())


@settings(max_examples=150, deadline=None)
@given(workloads())
def test_min_cost_with_feed_reads_is_optimal(workload):
    edges, rates, costs = workload
    best = min_cost_feeds(edges, rates, costs)
    optimum = min(with_feed_reads(assign(edges, [e for e, push in zip(edges, mask) if push],
                                         rates, costs), rates, costs)
                  for mask in product((False, True), repeat=len(edges)))
    assert with_feed_reads(best, rates, costs) == pytest.approx(optimum)


@settings(max_examples=100, deadline=None)
@given(workloads(), st.integers(0, 3), st.floats(0, 10, allow_nan=False))
@example(  # rates 10^9 apart: the percentile and the budget test share one tolerance
    ([Edge("p0", "c0"), Edge("p0", "c1")],
     Rates(producers=(("p0", 0.0),), consumers=(("c0", 1.192092896e-07),
                                                ("c1", 2.220446049250313e-16))),
     Costs(push=1.0, pull=1.0, read_push=0.0)), 1, 0.0)
def test_the_greedy_keeps_min_cost_pushes_the_cap_and_says_if_the_budget_holds(
        workload, cap, budget):
    edges, rates, costs = workload
    best = min_cost(edges, rates, costs, cap=cap)
    result = latency_constrained(edges, rates, costs, budget, cap=cap)
    assert best.push <= result.assignment.push  # never pulls a MinCost push edge
    assert result.assignment.cost >= best.cost - 1e-9
    assert result.met == (read_percentile(result.assignment, rates, costs) <= budget)
    for producer in {e.producer for e in edges}:
        assert sum(1 for e in result.assignment.push if e.producer == producer) <= cap
    if cap >= len(edges) and costs.read_push <= budget:
        assert result.met  # pushing every edge of a slow reader would do


@st.composite
def overlays(draw):
    size = draw(st.integers(1, 7))
    nodes = list(range(size))
    # edges only from lower to higher numbers: a DAG
    edges = draw(st.lists(st.sampled_from([(u, v) for u, v in combinations(nodes, 2)] or [(0, 0)]),
                          max_size=10, unique=True)) if size > 1 else []
    costs = {n: NodeCost(draw(rate), draw(rate)) for n in nodes}
    return costs, edges


@settings(max_examples=150, deadline=None)
@given(overlays(), st.sets(st.integers(0, 6), max_size=2))
@example(({0: NodeCost(19.0, 1.606527384068606), 1: NodeCost(48.0, 0.0),  # a denormal rate:
           2: NodeCost(1.0, 1.5693269322019194),  # networkx's preflow-push failed on it
           3: NodeCost(0.0, 1.1754307236197331e-278)}, [(1, 3), (0, 1), (0, 2), (0, 3)]), set())
@example(({0: NodeCost(35.0, 1.8303141155694984), 1: NodeCost(0.0, 0.0),  # a float flow a
           2: NodeCost(0.0, 0.0), 3: NodeCost(0.0, 0.0),  # rounding error short of a saturated
           4: NodeCost(1.0, 0.0),  # edge's capacity: networkx's cut put 4 and 5 on push
           5: NodeCost(1.4649741704700645, 2.0227691989982652)},
          [(0, 5), (0, 1), (0, 2), (0, 3), (0, 4), (4, 5)]), {1})
@example(({0: NodeCost(1.192092896e-07, 0.0), 1: NodeCost(0.0, 0.0),  # a saving far below
           2: NodeCost(0.0, 0.0), 3: NodeCost(0.0, 40.0)}, []), set())  # the largest capacity
def test_the_min_cut_partition_is_consistent_and_optimal(overlay, must_push):
    """Theorem 4.1 checked by brute force over every partition without an edge from a pull
    node to a push node (and with the forced nodes push)."""
    check_min_cut(overlay, must_push, {})


@settings(max_examples=150, deadline=None)
@given(overlays(), st.sets(st.integers(0, 6), max_size=2),
       st.dictionaries(st.tuples(st.integers(0, 6), st.integers(0, 6)), rate, max_size=4))
def test_the_min_cut_with_penalties_is_optimal(overlay, must_push, penalties):
    """A penalty on (u, v), paid when u is pull and v push (a pull reader reading a push
    input's row), keeps the cut optimal."""
    costs, edges = overlay
    check_min_cut(overlay, must_push, {(u, v): c for (u, v), c in penalties.items()
                                       if u in costs and v in costs and u != v})


def check_min_cut(overlay, must_push, penalties) -> None:
    costs, edges = overlay
    must_push = must_push & set(costs)
    found = partition(costs, edges, must_push, penalties)
    assert consistent(found.push, edges) and must_push <= found.push
    assert found.push | found.pull == set(costs) and not found.push & found.pull
    nodes = list(costs)
    optimum = min(partition_cost(costs, push, set(nodes) - push, penalties)
                  for mask in product((False, True), repeat=len(nodes))
                  for push in [frozenset(n for n, m in zip(nodes, mask) if m)]
                  if consistent(push, edges) and must_push <= push)
    assert found.cost == pytest.approx(optimum)

"""Push or pull, from read and write rates (pure: rates in, frozen decisions out).

Two papers decide what to precompute for the queries social applications live on:

- **Feeding Frenzy** (Silberstein et al., SIGMOD 2010), for feeds: per producer/consumer
  edge. Pushing an event along edge (p, c) costs H once; pulling it costs L at each of c's
  reads during the event's lifetime, ``L * phi_c / phi_p`` (Claim 1). So push iff
  ``phi_c / phi_p >= H / L`` (Lemma 1), and deciding each edge alone is globally optimal
  (Theorem 1): :func:`min_cost`. Under a per-read budget, pull edges move to push in
  order of ``phi_c / epsilon`` (epsilon: the extra cost of the move) until the budget
  holds, and back when it is slack (§3.3.1): :func:`latency_constrained`.
- **EAGr** (Mondal and Deshpande, SIGMOD 2014), for ego-centric aggregates: per node of an
  aggregation overlay (writers -> partial aggregates -> readers), with the constraint
  that no pull node feeds a push node. Minimising the sum of PUSH(v) over push nodes and
  PULL(v) over pull nodes is an s-t min-cut (§4.4, Theorem 4.1): :func:`partition`.

Every producer's push edges can be capped (``cap``): a write then maintains at most that
many consumers' views, whatever its fan-out, and the rest of its edges stay pull, which
keeps every write bounded (the cap piql's push plans assume, ``planner.adaptive``).

Nothing here reads a database or a clock: the runtime measures rates and applies
decisions (docs/adaptive.md says what is still to come).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from enum import StrEnum
from typing import Callable, Hashable, Iterable, Mapping

import networkx
from networkx.algorithms.flow import edmonds_karp

Node = Hashable


class Decision(StrEnum):
    """Precompute on write (push) or compute on read (pull)."""

    PUSH = "push"
    PULL = "pull"


@dataclass(frozen=True)
class Edge:
    """``consumer`` follows ``producer``: the producer's events reach the consumer's reads."""

    producer: Node
    consumer: Node


@dataclass(frozen=True)
class Costs:
    """H, the cost of pushing one event to one consumer; L, the cost of pulling one
    producer's recent events at one read; ``read_push``, the cost of reading a consumer's
    pushed events at one read (paid once per read when some edge is push)."""

    push: float
    pull: float
    read_push: float = 0.0

    def __post_init__(self) -> None:
        if self.push < 0 or self.pull <= 0 or self.read_push < 0:
            raise ValueError(f"costs must be positive (pull) or non-negative: {self}")


@dataclass(frozen=True)
class Rates:
    """Events per unit time of each producer (phi_p) and reads of each consumer (phi_c);
    a node without a rate has rate 0."""

    producers: tuple[tuple[Node, float], ...]
    consumers: tuple[tuple[Node, float], ...]

    @staticmethod
    def of(producers: Mapping[Node, float], consumers: Mapping[Node, float]) -> "Rates":
        return Rates(tuple(producers.items()), tuple(consumers.items()))

    @cached_property
    def _producer_rates(self) -> dict[Node, float]:
        return dict(self.producers)

    @cached_property
    def _consumer_rates(self) -> dict[Node, float]:
        return dict(self.consumers)

    def producer(self, node: Node) -> float:
        return self._producer_rates.get(node, 0.0)

    def consumer(self, node: Node) -> float:
        return self._consumer_rates.get(node, 0.0)


@dataclass(frozen=True)
class Assignment:
    """Every edge pushed or pulled, and the cost per unit time (Σ_push φp·H + Σ_pull φc·L)."""

    push: frozenset[Edge]
    pull: frozenset[Edge]
    cost: float

    def decision(self, edge: Edge) -> Decision:
        return Decision.PUSH if edge in self.push else Decision.PULL


# -- Feeding Frenzy: per edge ----------------------------------------------------------

def prefers_push(producer_rate: float, consumer_rate: float, costs: Costs) -> bool:
    """Lemma 1 (§3.2.1): push iff phi_c / phi_p >= H / L, compared as phi_c·L >= phi_p·H so
    a producer that never writes is pushed (it costs nothing) without dividing by 0."""
    return consumer_rate * costs.pull >= producer_rate * costs.push


def edge_cost(edge: Edge, decision: Decision, rates: Rates, costs: Costs) -> float:
    """Cost per unit time of one edge: every event pushed (phi_p·H) or every read pulling
    (phi_c·L); Claim 1's lifetime costs times the producer's event rate."""
    if decision == Decision.PUSH:
        return rates.producer(edge.producer) * costs.push
    return rates.consumer(edge.consumer) * costs.pull


def assign(edges: Iterable[Edge], push: Iterable[Edge], rates: Rates,
           costs: Costs) -> Assignment:
    """The assignment pushing exactly ``push`` (the rest of ``edges`` pulled), with its cost."""
    every = frozenset(edges)
    pushed = frozenset(push) & every
    pulled = every - pushed
    cost = sum(edge_cost(e, Decision.PUSH, rates, costs) for e in pushed) \
        + sum(edge_cost(e, Decision.PULL, rates, costs) for e in pulled)
    return Assignment(pushed, pulled, cost)


def min_cost(edges: Iterable[Edge], rates: Rates, costs: Costs,
             cap: int | None = None) -> Assignment:
    """MinCost (Theorem 1, §3.2.3): each edge by Lemma 1 alone; with ``cap``, each producer
    keeps the ``cap`` push edges of its most frequent readers (the largest saving, phi_c·L -
    phi_p·H, for one producer) and pulls the rest."""
    every = list(edges)
    push = [e for e in every
            if prefers_push(rates.producer(e.producer), rates.consumer(e.consumer), costs)]
    if cap is not None:
        push = capped(push, cap, rates)
    return assign(every, push, rates, costs)


def with_feed_reads(assignment: Assignment, rates: Rates, costs: Costs) -> float:
    """The cost of ``assignment`` when reading a consumer's pushed feed costs
    ``read_push`` at each of its reads, once it has any push edge."""
    readers = {e.consumer for e in assignment.push}
    return assignment.cost + sum(rates.consumer(c) * costs.read_push for c in readers)


def min_cost_feeds(edges: Iterable[Edge], rates: Rates, costs: Costs,
                   cap: int | None = None) -> Assignment:
    """MinCost when a consumer's pushed feed costs ``read_push`` per read (piql's feeds:
    its state and its feed range, beside the pulls): given any push edge, each edge is
    best decided alone (Lemma 1), so a consumer pushes exactly its Lemma 1 edges if their
    savings, Σ (phi_c·L - phi_p·H), exceed phi_c·read_push, and nothing otherwise. Optimal
    for :func:`with_feed_reads`' cost without ``cap``; with it, each producer then keeps
    its ``cap`` most frequent readers, as :func:`min_cost`."""
    every = list(edges)
    savings: dict[Node, float] = {}
    lemma = []
    for edge in every:
        producer, consumer = rates.producer(edge.producer), rates.consumer(edge.consumer)
        if prefers_push(producer, consumer, costs):
            lemma.append(edge)
            savings[edge.consumer] = savings.get(edge.consumer, 0.0) \
                + consumer * costs.pull - producer * costs.push
    push = [e for e in lemma
            if savings[e.consumer] > rates.consumer(e.consumer) * costs.read_push]
    if cap is not None:
        push = capped(push, cap, rates)
    return assign(every, push, rates, costs)


class Candidate(StrEnum):
    """Which assignment :func:`guarded` applied: MinCost's hybrid or an extreme."""

    HYBRID = "hybrid"
    PUSH = "push"
    PULL = "pull"


@dataclass(frozen=True)
class Guarded:
    """:func:`guarded`'s choice: the assignment to apply, which candidate it is, the
    hybrid's estimated saving over the cheaper extreme and that saving's standard error
    (both per unit time)."""

    assignment: Assignment
    chosen: Candidate
    saving: float
    error: float


def guarded(edges: Iterable[Edge], hybrid: Assignment, all_push: Iterable[Edge],
            rates: Rates, costs: Costs, margin: float = 0.01, unit: float = 0.0,
            z: float = 2.0) -> Guarded:
    """The hybrid only if it is estimated below the cheaper extreme (all ``all_push``
    pushed, or every edge pulled) by a margin, else that extreme.

    Lemma 1 is optimal for the *estimated* rates; an edge it pulls where all-push
    would push saves ``phi_p·H - phi_c·L``, a difference of two estimates. Where the
    extremes are nearly right (many reads per write: almost every edge push), the few
    edges the hybrid decides otherwise save less than their rates' sampling error, and
    the hybrid lands above the extreme it barely differs from. So the hybrid must save
    more than ``margin`` of the extreme's cost *and* more than ``z`` standard errors of
    its estimated saving: each rate is a count of events (``unit``: the rate of one
    event), Poisson, so var(phi) = max(phi, unit)·unit, and the saving is linear in the
    rates (its variance: Σ coefficient² · var over producers and consumers). With
    ``unit`` 0 only the margin guards."""
    every = list(edges)
    candidates = {Candidate.PUSH: assign(every, all_push, rates, costs),
                  Candidate.PULL: assign(every, (), rates, costs)}
    cost = {name: with_feed_reads(a, rates, costs) for name, a in candidates.items()}
    extreme = min(cost, key=lambda name: (cost[name], name))
    saving = cost[extreme] - with_feed_reads(hybrid, rates, costs)
    error = _saving_error(candidates[extreme], hybrid, rates, costs, unit)
    if saving > margin * cost[extreme] and saving > z * error:
        return Guarded(hybrid, Candidate.HYBRID, saving, error)
    return Guarded(candidates[extreme], extreme, saving, error)


def _saving_error(extreme: Assignment, hybrid: Assignment, rates: Rates, costs: Costs,
                  unit: float) -> float:
    """The standard error of ``cost(extreme) - cost(hybrid)`` (:func:`with_feed_reads`)
    when every rate is a Poisson count of events of rate ``unit`` each."""
    if unit <= 0:
        return 0.0
    producers: dict[Node, float] = {}  # d saving / d phi_p
    consumers: dict[Node, float] = {}  # d saving / d phi_c
    for edge in extreme.push ^ hybrid.push:
        sign = 1.0 if edge in extreme.push else -1.0  # pushed by the extreme, not the hybrid
        producers[edge.producer] = producers.get(edge.producer, 0.0) + sign * costs.push
        consumers[edge.consumer] = consumers.get(edge.consumer, 0.0) - sign * costs.pull
    readers = {e.consumer for e in extreme.push}
    hybrid_readers = {e.consumer for e in hybrid.push}
    for consumer in readers ^ hybrid_readers:
        sign = 1.0 if consumer in readers else -1.0
        consumers[consumer] = consumers.get(consumer, 0.0) + sign * costs.read_push
    return (_variance(producers, rates.producer, unit)
            + _variance(consumers, rates.consumer, unit)) ** 0.5


def _variance(coefficients: Mapping[Node, float], rate: Callable[[Node], float],
              unit: float) -> float:
    """Var Σ coefficient · rate, each rate a Poisson count of events of ``unit`` each
    (var = rate · unit). The keys estimated below one event (never counted: a
    Good-Turing share, or 0) share one event's variance between them besides: none of
    them was seen in the whole window, which bounds their total, not each one's, by
    about one event (a thousand users never seen reading did not each read once)."""
    faint = [c * c for k, c in coefficients.items() if rate(k) < unit]
    return sum(c * c * rate(k) * unit for k, c in coefficients.items()) \
        + max(faint, default=0.0) * unit * unit


def capped(push: Iterable[Edge], cap: int, rates: Rates) -> list[Edge]:
    """At most ``cap`` push edges per producer: those of its most frequent readers."""
    if cap < 0:
        raise ValueError(f"the push cap must be non-negative, not {cap}")
    by_producer: dict[Node, list[Edge]] = {}
    for edge in push:
        by_producer.setdefault(edge.producer, []).append(edge)
    kept: list[Edge] = []
    for group in by_producer.values():
        group.sort(key=lambda e: (-rates.consumer(e.consumer), repr(e.consumer)))
        kept += group[:cap]
    return kept


def read_ops(consumer: Node, assignment: Assignment, costs: Costs,
             offsets: Mapping[Node, float] | None = None) -> float:
    """What one read of ``consumer`` costs: L per pull edge, plus reading its pushed
    events, plus its ``offsets`` entry (what its measured reads cost beyond that model)."""
    pulls = sum(1 for e in assignment.pull if e.consumer == consumer)
    pushes = any(e.consumer == consumer for e in assignment.push)
    extra = (offsets or {}).get(consumer, 0.0)
    return pulls * costs.pull + (costs.read_push if pushes else 0.0) + extra


def read_percentile(assignment: Assignment, rates: Rates, costs: Costs,
                    percentile: float = 1.0,
                    offsets: Mapping[Node, float] | None = None) -> float:
    """The ``percentile`` of read costs over reads (each consumer weighted by its read
    rate): 1.0 is the costliest read any consumer makes. ``offsets``: per consumer, the
    measured read cost the model leaves out (``read_ops``)."""
    return _ReadCosts(assignment, costs, offsets).percentile(rates, percentile)


class _ReadCosts:
    """Pull and push edges per consumer, kept as edges move (so the greedy below costs
    O(consumers) per move, not O(edges))."""

    def __init__(self, assignment: Assignment, costs: Costs,
                 offsets: Mapping[Node, float] | None = None) -> None:
        self.costs = costs
        self.offsets = offsets or {}
        self.pulls: dict[Node, int] = {}
        self.pushes: dict[Node, int] = {}
        for edge in assignment.pull:
            self.pulls[edge.consumer] = self.pulls.get(edge.consumer, 0) + 1
            self.pushes.setdefault(edge.consumer, 0)
        for edge in assignment.push:
            self.pushes[edge.consumer] = self.pushes.get(edge.consumer, 0) + 1
            self.pulls.setdefault(edge.consumer, 0)

    def move(self, edge: Edge, to: Decision) -> None:
        step = 1 if to == Decision.PUSH else -1
        self.pushes[edge.consumer] += step
        self.pulls[edge.consumer] -= step

    def ops(self, consumer: Node) -> float:
        return self.pulls.get(consumer, 0) * self.costs.pull + (
            self.costs.read_push if self.pushes.get(consumer, 0) else 0.0) \
            + self.offsets.get(consumer, 0.0)

    def floor(self, consumer: Node) -> float:
        """The least a read of ``consumer`` can cost: every edge pushed."""
        edges = self.pulls.get(consumer, 0) + self.pushes.get(consumer, 0)
        return (self.costs.read_push if edges else 0.0) + self.offsets.get(consumer, 0.0)

    def within(self, rates: Rates, percentile: float, budget: float, unit: float = 0.0,
               z: float = 2.0) -> bool:
        """Do reads over ``budget`` weigh at most ``1 - percentile`` of all reads, each
        consumer's by its estimate plus ``z`` Poisson standard errors (``unit``: one
        read's rate)? With ``unit`` 0: is the ``percentile`` read cost within ``budget``."""
        total = over = 0.0
        for consumer in self.pulls:
            weight = rates.consumer(consumer)
            if weight > 0:
                total += weight
                if self.ops(consumer) > budget:
                    over += weight + z * (weight * unit) ** 0.5
        return over <= (1 - percentile) * total + 1e-12 * total

    def percentile(self, rates: Rates, percentile: float) -> float:
        weighted = sorted((self.ops(c), rates.consumer(c)) for c in self.pulls
                          if rates.consumer(c) > 0)
        total = sum(w for _, w in weighted)
        seen = 0.0
        for ops, weight in weighted:
            seen += weight
            if seen >= percentile * total - 1e-12 * total:  # the tolerance of within()
                return ops
        return 0.0


@dataclass(frozen=True)
class Constrained:
    """LatencyConstrainedMinCost's greedy result: the assignment, whether the read budget
    holds, and its percentile read cost."""

    assignment: Assignment
    met: bool
    read_cost: float


def latency_constrained(edges: Iterable[Edge], rates: Rates, costs: Costs, budget: float,
                        percentile: float = 1.0, cap: int | None = None,
                        start: Assignment | None = None,
                        offsets: Mapping[Node, float] | None = None,
                        unit: float = 0.0, z: float = 2.0,
                        unseen: Iterable[Node] = ()) -> Constrained:
    """§3.3.1's adaptive greedy from ``start`` (default MinCost): while the ``percentile``
    read cost exceeds ``budget``, shift the pull edge with the largest phi_c / epsilon to
    push (epsilon = phi_p·H - phi_c·L, the extra cost); while it is within budget, shift the
    least-ranked push edges that MinCost pulls back to pull as long as the budget still
    holds. MinCost's push edges are never pulled; a producer never exceeds ``cap`` push
    edges; only consumers whose reads exceed the budget gain push edges (the others'
    reads are not what breaks it), and not those no push can bring within it.

    ``offsets`` feed measured read costs back (§3.3.1's adaptive loop): per consumer, what
    its measured reads cost beyond the model (L per pull edge, ``read_push`` once pushed),
    e.g. its edge rows, and producers whose pulls cost more than the mean. A read's cost
    is then the model's plus its offset, in the unit the budget is measured in.

    ``unit`` (the rate of one counted read) makes the budget hold with confidence: each
    consumer left over budget weighs its rate plus ``z`` Poisson standard errors,
    sqrt(rate·unit). The consumers the greedy leaves over budget are those whose
    estimates are lowest, so their estimates are biased low: a handful of readers seen
    once or twice in the warm-up, each following 50 producers, weighed 0.6 % by estimate
    and read 1.4 % of the next trace. Without it (``unit`` 0) the estimate alone
    decides.

    ``unseen`` consumers have no measured rate at all (their rate is a Good-Turing guess,
    the same for each): no estimate can tell which of them will read, so none of them is
    left to the percentile. Each is held within the budget on its own (its pull edges
    pushed, cheapest extra cost first, until its read fits, if any push can make it fit),
    before the greedy, and the greedy's slack phase never pulls one back over it."""
    every = list(dict.fromkeys(edges))
    best = min_cost(every, rates, costs, cap)
    current = start if start is not None else best

    def rank(edge: Edge) -> float:
        extra = rates.producer(edge.producer) * costs.push \
            - rates.consumer(edge.consumer) * costs.pull
        return float("inf") if extra <= 0 else rates.consumer(edge.consumer) / extra

    push = set(current.push) & set(every)
    reads = _ReadCosts(assign(every, push, rates, costs), costs, offsets)
    held = set(unseen) & set(reads.pulls)
    per_producer: dict[Node, int] = {}
    for edge in push:
        per_producer[edge.producer] = per_producer.get(edge.producer, 0) + 1

    def fits() -> bool:
        return reads.within(rates, percentile, budget, unit, z) and all(
            reads.ops(c) <= budget for c in held)

    def shift(edge: Edge, to: Decision = Decision.PUSH) -> bool:
        """Push ``edge`` unless its producer is at the cap (or pull it back)."""
        step = 1 if to == Decision.PUSH else -1
        if to == Decision.PUSH and cap is not None and per_producer.get(edge.producer, 0) >= cap:
            return False
        (push.add if to == Decision.PUSH else push.discard)(edge)
        reads.move(edge, to)
        per_producer[edge.producer] = per_producer.get(edge.producer, 0) + step
        return True

    ranked = sorted(set(every) - push, key=lambda e: (-rank(e), repr(e)))
    for consumer in sorted(held, key=repr):  # unseen consumers first, each on its own
        moved = []
        for edge in (e for e in ranked if e.consumer == consumer):
            if reads.ops(consumer) <= budget or reads.floor(consumer) > budget:
                break
            if shift(edge):
                moved.append(edge)
        if reads.ops(consumer) > budget:  # the cap left it over: no use pushing part
            for edge in moved:
                shift(edge, Decision.PULL)
    held = {c for c in held if reads.ops(c) <= budget}
    for edge in ranked:
        if reads.within(rates, percentile, budget, unit, z):
            break
        if edge in push:
            continue
        if rates.consumer(edge.consumer) == 0 or reads.ops(edge.consumer) <= budget \
                or reads.floor(edge.consumer) > budget:
            continue  # a consumer that never reads, reads within budget or cannot: not it
        shift(edge)
    extra: dict[Node, list[Edge]] = {}
    for edge in push - best.push:
        extra.setdefault(edge.consumer, []).append(edge)
    for consumer in sorted(extra, key=repr):  # a consumer's extra pushes all back at once:
        if extra[consumer]:  # without its pushed feed's read, pulling all may be cheaper
            for edge in extra[consumer]:
                reads.move(edge, Decision.PULL)
            if fits():
                push -= set(extra[consumer])
            else:
                for edge in extra[consumer]:
                    reads.move(edge, Decision.PUSH)
    for edge in sorted(push - best.push, key=lambda e: (rank(e), repr(e))):
        reads.move(edge, Decision.PULL)
        if fits():
            push.discard(edge)
        else:
            reads.move(edge, Decision.PUSH)
    cost = reads.percentile(rates, percentile)
    return Constrained(assign(every, push, rates, costs), fits(), cost)


# -- EAGr: per overlay node --------------------------------------------------------------

@dataclass(frozen=True)
class NodeCost:
    """PUSH(v) = f_h(v)·H(deg v) and PULL(v) = f_l(v)·L(deg v) of one overlay node (§4.3)."""

    push: float
    pull: float


@dataclass(frozen=True)
class Partition:
    """The overlay's dataflow decisions: push nodes X, pull nodes Y (no edge from Y to X),
    and the total cost Σ_X PUSH + Σ_Y PULL."""

    push: frozenset[Node]
    pull: frozenset[Node]
    cost: float

    def decision(self, node: Node) -> Decision:
        return Decision.PUSH if node in self.push else Decision.PULL


def frequencies(edges: Iterable[tuple[Node, Node]], writes: Mapping[Node, float],
                reads: Mapping[Node, float]) -> dict[Node, tuple[float, float]]:
    """(f_h, f_l) of every overlay node (§4.1): push frequencies flow downstream from the
    writers' write rates (a node's is the sum of its inputs'), pull frequencies upstream
    from the readers' read rates (the sum of its outputs')."""
    graph = _dag(edges, set(writes) | set(reads))
    push: dict[Node, float] = {}
    for node in networkx.topological_sort(graph):
        inputs = list(graph.predecessors(node))
        push[node] = sum(push[u] for u in inputs) if inputs else writes.get(node, 0.0)
    pull: dict[Node, float] = {}
    for node in reversed(list(networkx.topological_sort(graph))):
        outputs = list(graph.successors(node))
        pull[node] = sum(pull[v] for v in outputs) if outputs else reads.get(node, 0.0)
    return {node: (push[node], pull[node]) for node in graph.nodes}


def node_costs(edges: Iterable[tuple[Node, Node]], writes: Mapping[Node, float],
               reads: Mapping[Node, float], push_cost: Callable[[int], float],
               pull_cost: Callable[[int], float]) -> dict[Node, NodeCost]:
    """PUSH and PULL of every node from the rates and H(k), L(k) of a node with k inputs
    (a writer counts as one input: its own value). For SUM, H(k) ~ 1 and L(k) ~ k (§4.2)."""
    pairs = list(edges)
    graph = _dag(pairs, set(writes) | set(reads))
    found = {}
    for node, (f_h, f_l) in frequencies(pairs, writes, reads).items():
        inputs = max(1, graph.in_degree(node))
        found[node] = NodeCost(f_h * push_cost(inputs), f_l * pull_cost(inputs))
    return found


def partition(costs: Mapping[Node, NodeCost], edges: Iterable[tuple[Node, Node]],
              must_push: Iterable[Node] = (),
              penalties: Mapping[tuple[Node, Node], float] | None = None) -> Partition:
    """The optimal dataflow decisions of an overlay (EAGr §4.4): the difference-maximising
    partition with w(v) = PULL(v) - PUSH(v), found as an s-t min-cut. An overlay edge
    (u, v) (u feeds v) gets infinite capacity, s -> v capacity -w(v) when w(v) < 0, v -> t
    capacity w(v) when w(v) > 0; the nodes reachable from s in the residual graph are pull
    (an infinite edge carries reachability downstream, so no pull node feeds a push node),
    the rest push (Theorem 4.1). ``must_push`` nodes (EAGr's writers, or a node whose pull
    piql cannot bound) get an infinite edge to t, so they and everything upstream of them
    are push.

    ``penalties[(u, v)]`` is a cost paid when u is pull and v push (an edge u -> v of that
    capacity, cut exactly then): a pull reader reading a push input pays a row for it,
    while its pull inputs' reads are their own PULL (``runtime.aggregates``); EAGr's
    L(k) = k charges the row either way."""
    pairs = list(edges)
    graph = _dag(pairs, set(costs))
    source, sink = object(), object()  # never equal to a node of the overlay
    flow = networkx.DiGraph()
    flow.add_nodes_from([source, sink, *graph.nodes])
    flow.add_edges_from(graph.edges)  # no capacity attribute: infinite
    forced = set(must_push)
    for node in graph.nodes:
        cost = costs[node]
        weight = cost.pull - cost.push
        if node in forced:
            flow.add_edge(node, sink)  # infinite: never on the pull side
        elif weight < 0:
            flow.add_edge(source, node, capacity=-weight)
        elif weight > 0:
            flow.add_edge(node, sink, capacity=weight)
    for (u, v), penalty in (penalties or {}).items():
        if penalty > 0 and not flow.has_edge(u, v):  # an overlay edge: infinite already
            flow.add_edge(u, v, capacity=penalty)
    # Edmonds-Karp: networkx's default preflow-push fails on float capacities far apart in
    # magnitude (a denormal beside ordinary rates raised StopIteration inside networkx)
    residual = edmonds_karp(flow, source, sink)
    pull = frozenset(n for n in _reachable(residual, source) if n in graph.nodes)
    push = frozenset(graph.nodes) - pull
    return Partition(push, pull, partition_cost(costs, push, pull, penalties))


def _reachable(residual: "networkx.DiGraph", source: object) -> set:
    """The nodes reachable from ``source`` over residual edges with capacity left. Float
    flows leave a saturated edge a rounding error short of its capacity, so "left" is
    relative to the largest capacity; networkx's own cut reads the sink's side instead,
    where such an error moved nodes across and gave a cut above the minimum. An edge no
    flow crossed keeps its whole capacity, however small beside the largest."""
    eps = 1e-9 * residual.graph["inf"]
    seen, stack = {source}, [source]
    while stack:
        node = stack.pop()
        for _, nxt, data in residual.out_edges(node, data=True):
            left = data["capacity"] - data["flow"]  # an edge no flow touched is not short:
            if nxt not in seen and (left > eps or (left > 0 and data["flow"] == 0)):
                seen.add(nxt)
                stack.append(nxt)
    return seen


def partition_cost(costs: Mapping[Node, NodeCost], push: Iterable[Node],
                   pull: Iterable[Node],
                   penalties: Mapping[tuple[Node, Node], float] | None = None) -> float:
    pushed, pulled = set(push), set(pull)
    return sum(costs[n].push for n in pushed) + sum(costs[n].pull for n in pulled) + sum(
        c for (u, v), c in (penalties or {}).items() if u in pulled and v in pushed)


def consistent(push: frozenset[Node], edges: Iterable[tuple[Node, Node]]) -> bool:
    """No edge from a pull node to a push node (EAGr §2.2.1): a push node's inputs are all
    kept up to date."""
    return all(not (u not in push and v in push) for u, v in edges)


def _dag(edges: list[tuple[Node, Node]], nodes: set[Node]) -> "networkx.DiGraph":
    graph = networkx.DiGraph()
    graph.add_nodes_from(nodes)
    graph.add_edges_from(edges)
    if not networkx.is_directed_acyclic_graph(graph):
        raise ValueError("an aggregation overlay must be acyclic")
    return graph

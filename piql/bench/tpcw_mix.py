"""The TPC-W ordering mix as a seeded sequence of web interactions, each a list of named
queries (with parameter values) and maintained writes.

Which named queries a web interaction runs is kept in one place,
:data:`INTERACTION_QUERIES`, as name prefixes matched against the queries file,
so the driver keeps working as that file is refined. Parameter values are
chosen by the column a parameter is compared with (an item id, the session's
customer, a title word, the current hour's epoch, ...), so the driver needs no
knowledge of parameter names either.

The whole sequence is planned up front from the generated data and a model of
the state the writes leave behind (customers, orders, carts, item rows), so
every backend (piql, SQLite on demand, DuckDB on demand) runs exactly the same
interactions with the same values and ends in the same state.

Simplifications of the TPC-W rules, stated here once:

- interactions are drawn independently with the ordering-mix frequencies
  (clause 5.2.1, WIPSo) instead of through the Markov chain of page transitions;
  rare interactions are topped up to a minimum sample count for their p99;
- a BuyRequest or BuyConfirm drawn for a browser whose cart is empty is
  preceded by a ShoppingCart interaction that fills it;
- CustomerRegistration writes the new customer and address (TPC-W defers it to
  the next BuyRequest); BuyRequest only reads;
- AdminConfirm sets five random related items instead of the co-purchase
  query's answer (the answer is read, but not fed back, so that the plan does
  not depend on the backend).
"""
from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable, Union

import duckdb

from piql import sqlgen
from piql.bench import tpcw_data as data
from piql.catalog import Catalog
from piql.planner.application import Plan

# TPC-W v1.8 clause 5.2.1: the ordering mix (WIPSo), percent of web interactions.
MIX: dict[str, float] = {
    "Home": 9.12, "NewProducts": 0.46, "BestSellers": 0.46, "ProductDetail": 12.35,
    "SearchRequest": 14.53, "SearchResult": 13.08, "ShoppingCart": 13.53,
    "CustomerRegistration": 12.86, "BuyRequest": 12.73, "BuyConfirm": 10.18,
    "OrderInquiry": 0.25, "OrderDisplay": 0.22, "AdminRequest": 0.12, "AdminConfirm": 0.11,
}
WRITE_INTERACTIONS = ("ShoppingCart", "BuyConfirm", "CustomerRegistration", "AdminConfirm")
THINK_TIME_MS = 7000  # TPC-W mean think time: each browser issues an interaction every ~7 s


@dataclass(frozen=True)
class Use:
    """Queries an interaction runs: every query whose name starts with one of ``prefixes``
    (in file order), or just one of them chosen at random when ``one_of``."""

    prefixes: tuple[str, ...]
    one_of: bool = False


# The one place that maps TPC-W web interactions to the named queries they run.
PROMOTION = Use(("promotional", "promo_", "home_promo", "related_items"))
INTERACTION_QUERIES: dict[str, tuple[Use, ...]] = {
    "Home": (Use(("home",)), PROMOTION),
    "NewProducts": (Use(("new_products",)), PROMOTION),
    "BestSellers": (Use(("best_sellers",)), PROMOTION),
    "ProductDetail": (Use(("product_detail",)),),
    "SearchRequest": (Use(("search_request",)), PROMOTION),
    "SearchResult": (Use(("search_by_", "search_result"), one_of=True), PROMOTION),
    "ShoppingCart": (Use(("cart_", "shopping_cart")), PROMOTION),
    "CustomerRegistration": (Use(("customer_registration", "register")),),
    "BuyRequest": (Use(("buy_request", "customer_by_uname", "get_customer", "login")),
                   Use(("cart_", "shopping_cart"))),
    "BuyConfirm": (Use(("buy_confirm",)), Use(("cart_", "shopping_cart"))),
    "OrderInquiry": (Use(("order_inquiry",)),),
    "OrderDisplay": (Use(("order_display",)),),
    "AdminRequest": (Use(("admin_request",)),),
    "AdminConfirm": (Use(("admin_confirm", "admin_related", "admin_co", "admin_item")),),
}

# Columns that name the same thing: a parameter compared with any of them gets that thing.
ENTITIES: dict[tuple[str, str], str] = {
    **{(t, c): "item" for t, c in (
        ("item", "i_id"), ("order_line", "ol_i_id"), ("shopping_cart_line", "scl_i_id"),
        ("item_title_word", "itw_i_id"), *(("item", f"i_related{k}") for k in range(1, 6)))},
    ("customer", "c_id"): "customer", ("orders", "o_c_id"): "customer",
    ("customer", "c_uname"): "uname", ("customer", "c_passwd"): "passwd",
    ("orders", "o_id"): "order", ("order_line", "ol_o_id"): "order", ("cc_xacts", "cx_o_id"): "order",
    ("shopping_cart", "sc_id"): "cart", ("shopping_cart_line", "scl_sc_id"): "cart",
    ("author", "a_id"): "author", ("item", "i_a_id"): "author",
    ("author", "a_lname"): "a_lname", ("item", "i_subject"): "subject",
    ("item_title_word", "itw_word"): "word",
    ("address", "addr_id"): "address", ("customer", "c_addr_id"): "address",
    ("country", "co_id"): "country", ("address", "addr_co_id"): "country",
}


@dataclass(frozen=True)
class Read:
    query: str
    params: tuple[tuple[str, Any], ...]

    @property
    def values(self) -> dict[str, Any]:
        return dict(self.params)


@dataclass(frozen=True)
class Write:
    """One maintained write: ``insert`` and ``update`` carry the whole row, ``delete`` the key."""

    kind: str
    table: str
    row: tuple[tuple[str, Any], ...]

    @property
    def values(self) -> dict[str, Any]:
        return dict(self.row)


Action = Union[Read, Write]


@dataclass(frozen=True)
class Step:
    """One web interaction of one emulated browser at simulated time ``now_ms``."""

    interaction: str
    browser: int
    now_ms: int
    actions: tuple[Action, ...]
    measured: bool


@dataclass(frozen=True)
class Binding:
    """What a parameter is compared with: a column (and the comparison) or a time epoch."""

    param: str
    table: str
    column: str
    op: str = "="
    epoch_width: int | None = None


@dataclass(frozen=True)
class Workload:
    steps: tuple[Step, ...]
    queries: dict[str, tuple[str, ...]]  # interaction -> queries it may run
    unmapped: tuple[str, ...]            # bounded queries no interaction runs
    skipped: tuple[str, ...]             # unbounded queries (piql does not run them)


# -- which queries ---------------------------------------------------------------------
def interaction_queries(plan: Plan) -> tuple[dict[str, tuple[tuple[str, ...], ...]],
                                             tuple[str, ...], tuple[str, ...]]:
    """Per interaction, its query groups (names); the bounded queries nobody runs; and the
    unbounded ones, which are left out."""
    runnable = [q.name for q in plan.queries if q.physical is not None]
    skipped = tuple(q.name for q in plan.queries if q.physical is None)
    groups: dict[str, tuple[tuple[str, ...], ...]] = {}
    used: set[str] = set()
    for interaction, uses in INTERACTION_QUERIES.items():
        found = []
        for use in uses:
            names = tuple(n for n in runnable if n.lower().startswith(use.prefixes))
            if not names:
                continue
            used.update(names)
            found += [names] if use.one_of else [(n,) for n in names]
        groups[interaction] = tuple(found)
    return groups, tuple(n for n in runnable if n not in used), skipped


def bindings(plan: Plan, name: str) -> tuple[Binding, ...]:
    """How each parameter of query ``name`` is bound to a column."""
    query = plan.query(name)
    assert query is not None
    return tuple(Binding(p.name, (p.table or "").lower(), p.column.lower(), p.op, p.epoch_width)
                 for p in query.params if p.column is not None)


# -- the state the writes change -------------------------------------------------------
@dataclass
class Session:
    customer: int
    cart: int | None = None
    lines: dict[int, int] = field(default_factory=dict)  # item -> quantity


@dataclass
class World:
    """What the driver knows of the store: enough to choose parameters and build writes."""

    catalog: Catalog
    dataset: data.Dataset
    rng: random.Random
    items: dict[int, dict[str, Any]]
    customer_address: dict[int, int]
    last_order: dict[int, int]
    orders_per_customer: Counter
    authors: int
    last_names: list[str]
    words: list[str]
    next_customer: int
    next_address: int
    next_order: int
    next_cart: int = 1
    cart_limit: int = 20
    order_limit: int | None = None
    samples: dict[tuple[str, str], list[Any]] = field(default_factory=dict)

    @classmethod
    def of(cls, catalog: Catalog, dataset: data.Dataset, seed: int) -> "World":
        con = duckdb.connect()
        try:
            item_columns = [c for c in _columns(catalog, "item")]
            def read(sql: str, table: str) -> list[tuple]:  # the file path is bound
                return con.execute(sql, [str(dataset.path(table))]).fetchall()

            select = ", ".join(sqlgen.identifier(c, "duckdb") for c in item_columns)
            items = {r[0]: dict(zip(item_columns, r)) for r in read(
                f"SELECT {select} FROM read_parquet(?) ORDER BY i_id", "item")}
            addresses = dict(read("SELECT c_id, c_addr_id FROM read_parquet(?)", "customer"))
            orders = read("SELECT o_c_id, max(o_id), COUNT(*) FROM read_parquet(?) "
                          "GROUP BY o_c_id", "orders")
            names = [r[0] for r in read("SELECT DISTINCT a_lname FROM read_parquet(?) "
                                        "ORDER BY 1", "author")]
            words = [r[0] for r in read("SELECT DISTINCT itw_word FROM read_parquet(?) "
                                        "ORDER BY 1", "item_title_word")]
        finally:
            con.close()
        scale = dataset.scale
        limits = data.Limits.of(catalog)
        carts = [limit for limit in (
            data.cardinality_limit(catalog, "shopping_cart_line", "scl_i_id", ("scl_sc_id",)),
            limits.lines_per_order) if limit is not None]
        return cls(catalog, dataset, random.Random(seed), items, addresses,
                   {c: o for c, o, _ in orders}, Counter({c: n for c, _, n in orders}),
                   scale.authors, names, words, scale.customers + 1, scale.addresses + 1,
                   scale.orders + 1, cart_limit=min([20] + carts),
                   order_limit=limits.orders_per_customer)

    # -- parameter values ----------------------------------------------------------
    def value(self, binding: Binding, session: Session, now_ms: int) -> Any:
        """A value for a parameter, by the column it is compared with."""
        if binding.epoch_width is not None:
            return now_ms - now_ms % binding.epoch_width
        entity = ENTITIES.get((binding.table, binding.column))
        if entity is not None:
            return self._entity(entity, session)
        if binding.op != "=" and self._is_time(binding):
            return now_ms - 3_600_000 if binding.op in (">", ">=") else now_ms
        return self._sample(binding.table, binding.column)

    def _entity(self, entity: str, session: Session) -> Any:
        rng = self.rng
        customer = session.customer
        chosen = {
            "item": lambda: rng.randint(1, len(self.items)),
            "customer": lambda: customer,
            "uname": lambda: data.uname(customer),
            "passwd": lambda: data.uname(customer).lower(),
            "order": lambda: self.last_order.get(customer) or rng.randint(1, self.next_order - 1),
            "cart": lambda: session.cart if session.cart is not None else
                rng.randint(1, max(1, self.next_cart - 1)),
            "author": lambda: rng.randint(1, self.authors),
            "a_lname": lambda: rng.choice(self.last_names),
            "subject": lambda: rng.choice(data.SUBJECTS),
            "word": lambda: rng.choice(self.words),
            "address": lambda: self.customer_address.get(customer, 1),
            "country": lambda: rng.randint(1, len(data.COUNTRIES)),
        }
        return chosen[entity]()

    def _is_time(self, binding: Binding) -> bool:
        table = self.catalog.table(binding.table)
        column = table.column(binding.column) if table else None
        return column is not None and (column.temporal or "date" in column.name.lower()
                                       or "time" in column.name.lower())

    def _sample(self, table: str, column: str) -> Any:
        """Any value of a column the generator wrote (for parameters of no known kind)."""
        key = (table, column)
        if key not in self.samples:
            path = self.dataset.files.get(table)
            values: list[Any] = []
            if path is not None:
                quoted = sqlgen.identifier(column, "duckdb")
                values = [r[0] for r in duckdb.sql(
                    f"SELECT DISTINCT {quoted} FROM read_parquet($path) WHERE {quoted} "
                    "IS NOT NULL ORDER BY 1 LIMIT 1000", params={"path": str(path)}).fetchall()]
            if not values:
                raise ValueError(f"no value to bind to a parameter compared with {table}.{column}: "
                                 "the generator writes no such column")
            self.samples[key] = values
        return self.rng.choice(self.samples[key])

    # -- writes -----------------------------------------------------------------------
    def new_session(self) -> Session:
        return Session(self.rng.randint(1, self.next_customer - 1))


def _columns(catalog: Catalog, table: str) -> list[str]:
    found = catalog.table(table)
    if found is None:
        raise ValueError(f"the schema has no table {table!r}, which TPC-W needs")
    return list(found.column_names)


def _write(world: "World", kind: str, table: str, row: dict[str, Any]) -> Write:
    """A write of ``row``; inserts and updates carry exactly the schema's columns."""
    if kind != "delete":
        row = {c: row.get(c) for c in _columns(world.catalog, table)}
    return Write(kind, table, tuple(row.items()))


# -- the plan of the run ------------------------------------------------------------------
def plan_workload(plan: Plan, dataset: data.Dataset, *, interactions: int, warmup: int,
                  min_samples: int, seed: int) -> Workload:
    """The seeded sequence of steps every backend runs: ``warmup`` unmeasured interactions,
    then ``interactions`` drawn from the ordering mix, topped up so every interaction is
    measured at least ``min_samples`` times."""
    groups, unmapped, skipped = interaction_queries(plan)
    binds = {name: bindings(plan, name) for g in groups.values() for names in g for name in names}
    world = World.of(plan.catalog, dataset, seed)
    rng = random.Random(seed + 1)
    names = _draw(rng, warmup, 0) + _draw(rng, interactions, min_samples)
    sessions = [world.new_session() for _ in range(dataset.scale.ebs)]
    now = dataset.now_ms
    steps: list[Step] = []
    for number, interaction in enumerate(names):
        measured = number >= warmup
        browser = rng.randrange(len(sessions))
        session = sessions[browser]
        if interaction in ("BuyRequest", "BuyConfirm") and not session.lines:
            now += _think(rng, dataset.scale.ebs)
            steps.append(_step(world, groups, binds, "ShoppingCart", browser, session, now, measured))
        now += _think(rng, dataset.scale.ebs)
        steps.append(_step(world, groups, binds, interaction, browser, session, now, measured))
        if interaction == "BuyConfirm":
            sessions[browser] = world.new_session()
    return Workload(tuple(steps), {k: tuple(n for g in v for n in g) for k, v in groups.items()},
                    unmapped, skipped)


def _draw(rng: random.Random, count: int, min_samples: int) -> list[str]:
    names = rng.choices(list(MIX), weights=list(MIX.values()), k=count)
    have = Counter(names)
    names += [n for n in MIX for _ in range(max(0, min_samples - have[n]))]
    rng.shuffle(names)
    return names


def _think(rng: random.Random, browsers: int) -> int:
    """Simulated time between two interactions of ``browsers`` browsers thinking ~7 s each."""
    return max(1, int(rng.expovariate(browsers / THINK_TIME_MS)))


def _step(world: World, groups, binds, interaction: str, browser: int, session: Session,
          now: int, measured: bool) -> Step:
    reads = _reads(world, groups[interaction], binds, session, now)
    builder = WRITERS.get(interaction)
    actions: list[Action] = list(reads)
    if builder is not None:
        writes = builder(world, session, now)
        # a cart page shows the cart after the change; an order is placed from the cart read
        actions = writes + reads if interaction == "ShoppingCart" else reads + writes
    return Step(interaction, browser, now, tuple(actions), measured)


def _reads(world: World, groups, binds, session: Session, now: int) -> list[Read]:
    reads = []
    for names in groups:
        name = names[0] if len(names) == 1 else world.rng.choice(names)
        params = tuple((b.param, world.value(b, session, now)) for b in binds[name])
        reads.append(Read(name, params))
    return reads


def _shopping_cart(world: World, session: Session, now: int) -> list[Write]:
    """Add an item (or one more of it) to the browser's cart, creating the cart if needed."""
    writes = []
    if session.cart is None:
        session.cart = world.next_cart
        world.next_cart += 1
        writes.append(_write(world, "insert", "shopping_cart", {"sc_id": session.cart, "sc_time": now}))
    else:
        writes.append(_write(world, "update", "shopping_cart", {"sc_id": session.cart, "sc_time": now}))
    item = world.rng.randint(1, len(world.items))
    if item not in session.lines and len(session.lines) >= world.cart_limit:
        item = world.rng.choice(sorted(session.lines))
    line = {"scl_sc_id": session.cart, "scl_i_id": item}
    if item in session.lines:
        session.lines[item] += 1
        writes.append(_write(world, "update", "shopping_cart_line", {**line, "scl_qty": session.lines[item]}))
    else:
        session.lines[item] = 1
        writes.append(_write(world, "insert", "shopping_cart_line", {**line, "scl_qty": 1}))
    return writes


def _customer_registration(world: World, session: Session, now: int) -> list[Write]:
    """A new customer with a new address; the browser continues as that customer."""
    rng = world.rng
    c_id, addr_id = world.next_customer, world.next_address
    world.next_customer += 1
    world.next_address += 1
    name = data.uname(c_id)
    address = {"addr_id": addr_id, "addr_street1": _text(rng, 15, 40),
               "addr_street2": _text(rng, 15, 40), "addr_city": _text(rng, 4, 30),
               "addr_state": _text(rng, 2, 20), "addr_zip": _text(rng, 5, 10),
               "addr_co_id": rng.randint(1, len(data.COUNTRIES))}
    customer = {"c_id": c_id, "c_uname": name, "c_passwd": name.lower(),
                "c_fname": _text(rng, 8, 15), "c_lname": _text(rng, 8, 15), "c_addr_id": addr_id,
                "c_phone": str(rng.randrange(10**11, 10**12)),
                "c_email": f"{name}@{_text(rng, 2, 9)}.com", "c_since": now, "c_last_login": now,
                "c_login": now, "c_expiration": now + 2 * 3_600_000,
                "c_discount": rng.randint(0, 50) / 100, "c_balance": 0.0, "c_ytd_pmt": 0.0,
                "c_birthdate": now - rng.randint(5000, 48000) * data.DAY_MS,
                "c_data": _text(rng, 100, 500)}
    world.customer_address[c_id] = addr_id
    session.customer = c_id
    return [_write(world, "insert", "address", address),
            _write(world, "insert", "customer", customer)]


def _buy_confirm(world: World, session: Session, now: int) -> list[Write]:
    """Turn the cart into an order: the order, its lines and card transaction, the stock of
    every item bought, and an emptied cart (TPC-W clause 2.10)."""
    rng = world.rng
    customer = session.customer
    if world.order_limit is not None and world.orders_per_customer[customer] >= world.order_limit:
        customer = _customer_with_room(world)
    o_id = world.next_order
    world.next_order += 1
    lines = sorted(session.lines.items())
    sub_total = round(sum(world.items[i]["i_cost"] * q for i, q in lines), 2)
    total = round(sub_total * 1.0825 + 3.00 + len(lines), 2)
    address = world.customer_address.get(customer, 1)
    order = {"o_id": o_id, "o_c_id": customer, "o_date": now, "o_sub_total": sub_total,
             "o_tax": round(sub_total * 0.0825, 2), "o_total": total,
             "o_ship_type": rng.choice(data.SHIP_TYPES),
             "o_ship_date": now + rng.randint(0, 7) * data.DAY_MS, "o_bill_addr_id": address,
             "o_ship_addr_id": address, "o_status": "PENDING"}
    writes = [_write(world, "insert", "orders", order)]
    for number, (item, qty) in enumerate(lines, start=1):
        writes.append(_write(world, "insert", "order_line", {
            "ol_id": number, "ol_o_id": o_id, "ol_i_id": item, "ol_qty": qty,
            "ol_discount": rng.randint(0, 30) / 1000, "ol_comments": _text(rng, 20, 100)}))
    writes.append(_write(world, "insert", "cc_xacts", {
        "cx_o_id": o_id, "cx_type": rng.choice(data.CREDIT_CARDS),
        "cx_num": str(rng.randrange(10**15, 10**16)), "cx_name": _text(rng, 17, 31),
        "cx_expire": now + rng.randint(10, 730) * data.DAY_MS, "cx_auth_id": _text(rng, 15, 15),
        "cx_xact_amt": total, "cx_xact_date": now, "cx_co_id": rng.randint(1, len(data.COUNTRIES))}))
    for item, qty in lines:
        row = world.items[item]
        stock = row["i_stock"] - qty
        row["i_stock"] = stock + 21 if stock < 10 else stock
        writes.append(_write(world, "update", "item", dict(row)))
    for item, _ in lines:
        writes.append(_write(world, "delete", "shopping_cart_line",
                             {"scl_sc_id": session.cart, "scl_i_id": item}))
    world.last_order[customer] = o_id
    world.orders_per_customer[customer] += 1
    session.lines.clear()
    return writes


def _customer_with_room(world: World) -> int:
    while True:
        customer = world.rng.randint(1, world.next_customer - 1)
        if world.orders_per_customer[customer] < (world.order_limit or 0):
            return customer


def _admin_confirm(world: World, session: Session, now: int) -> list[Write]:
    """New price, images, publication date and related items for one item (TPC-W 2.16)."""
    rng = world.rng
    item = rng.randint(1, len(world.items))
    row = world.items[item]
    related = rng.sample(range(1, len(world.items) + 1), min(5, len(world.items)))
    row.update({"i_cost": round(row["i_srp"] * rng.uniform(0.5, 1.0), 2),
                "i_image": f"img{item % 100}/image_{item}_{now}.gif",
                "i_thumbnail": f"img{item % 100}/thumb_{item}_{now}.gif", "i_pub_date": now,
                **{f"i_related{k}": related[(k - 1) % len(related)] for k in range(1, 6)}})
    return [_write(world, "update", "item", dict(row))]


WRITERS = {"ShoppingCart": _shopping_cart, "CustomerRegistration": _customer_registration,
           "BuyConfirm": _buy_confirm, "AdminConfirm": _admin_confirm}


def _text(rng: random.Random, low: int, high: int) -> str:
    return "".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(low, high)))


def counts(steps: Iterable[Step]) -> Counter:
    """Measured steps per interaction."""
    return Counter(s.interaction for s in steps if s.measured)

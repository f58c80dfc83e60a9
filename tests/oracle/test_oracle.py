"""The oracle harness over the project's applications: random histories of writes and
refreshes, every answer checked against the query's own SQL (see harness.py).

Every profile also runs on PostgreSQL (each history on a new schema of the test server):
``make test`` runs 3 histories of two applications there, CI (``slow``) the whole short
profile on every application.

Profiles: ``short`` (the default, part of ``make test``, about a minute: 10 histories
of 15 steps per application, on DuckDB, and the messaging app on the store engine) and
``long`` (the tests marked ``slow``, run by CI after ``make test``, a few minutes: 25
histories of 30 steps, views checked every 5 writes, every application on DuckDB and
the new ones on the store engine too). ``PIQL_ORACLE_PROFILE=long`` runs the default
tests with the long profile. The short profile is derandomized so ``make test`` is
repeatable; the long one explores new histories on every run (and replays the failures
hypothesis saved).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (RuleBasedStateMachine, initialize, precondition, rule,
                                 run_state_machine_as_test)

from tests.oracle.harness import (EXISTING_APPS, HOUR, NEW_APPS, T0, OracleApp, Session, Stats,
                                  Writer, existing_app, oracle_app)


@dataclass(frozen=True)
class Profile:
    examples: int
    steps: int
    check_every: int
    derandomize: bool


PROFILES = {
    "short": Profile(examples=10, steps=15, check_every=0, derandomize=True),
    "long": Profile(examples=25, steps=30, check_every=5, derandomize=False),
}
DEFAULT_PROFILE = PROFILES[os.environ.get("PIQL_ORACLE_PROFILE", "short")]

def machine(oracle: OracleApp, engine: str, profile: Profile, totals: Stats,
            stores: Callable[[], str] = lambda: ":memory:") -> type[RuleBasedStateMachine]:
    """A state machine whose rules are the writes and refreshes of one application; each
    history's counts are added to ``totals``."""
    tables = [t.name for t in oracle.plan.catalog.tables]
    # parents first, so the first rows written can be referred to
    order = _parents_first(oracle)
    periodic = any(q.level == "SI-3" for q in oracle.plan.queries)

    class Oracle(RuleBasedStateMachine):
        @initialize(data=st.data())
        def seed_rows(self, data) -> None:
            partitions = data.draw(st.sampled_from([3, 1, 2, 16]), label="partitions")
            self.session = Session(oracle, engine=engine, partitions=partitions,
                                   check_every=profile.check_every, store=stores())
            self.writer = Writer(self.session)
            for name in order:
                table = self.session.table(name)
                for _ in range(data.draw(st.integers(1, 3), label=f"{name} rows")):
                    self.session.insert(name, self.writer.row(data, table))
            self.session.assert_queries()

        @rule(data=st.data(), table=st.sampled_from(tables))
        def insert(self, data, table) -> None:
            self.session.insert(table, self.writer.row(data, self.session.table(table)))
            self.session.assert_queries()

        @rule(data=st.data(), table=st.sampled_from(tables))
        def delete(self, data, table) -> None:
            self.session.delete(table, self.writer.key(data, self.session.table(table)))
            self.session.assert_queries()

        @rule(data=st.data(), table=st.sampled_from(tables))
        def update(self, data, table) -> None:
            self.session.update(table, self.writer.changed(data, self.session.table(table)))
            self.session.assert_queries()

        @rule(data=st.data(), table=st.sampled_from(tables))
        def burst(self, data, table) -> None:
            for row in self.writer.burst(data, self.session.table(table)):
                self.session.insert(table, row)
                self.session.assert_queries()

        @rule(data=st.data(), table=st.sampled_from(tables))
        def load(self, data, table) -> None:
            shape = self.session.table(table)
            rows = [self.writer.row(data, shape) for _ in range(data.draw(st.integers(1, 3)))]
            self.session.load(table, rows)
            self.session.assert_queries()

        @precondition(lambda self: periodic)
        @rule(data=st.data())
        def refresh(self, data) -> None:
            now = data.draw(st.one_of(st.just(self.session.now()),
                                      st.sampled_from([T0 + HOUR // 2, T0 + 5 * HOUR])),
                            label="now_ms")
            self.session.refresh(now)

        def teardown(self) -> None:
            session = getattr(self, "session", None)
            if session is None:  # the first rule failed before deploying
                return
            try:
                session.finish()
            finally:
                totals.add(session.stats)
                session.close()

    Oracle.__name__ = f"Oracle_{oracle.name}_{engine}"
    return Oracle


def _parents_first(oracle: OracleApp) -> list[str]:
    catalog = oracle.plan.catalog
    done: list[str] = []

    def visit(name: str) -> None:
        if name in done:
            return
        for fk in catalog.table(name).foreign_keys:  # type: ignore[union-attr]
            parent = catalog.table(fk.ref_table)
            if parent is not None and parent.name != name:
                visit(parent.name)
        done.append(name)

    for table in catalog.tables:
        visit(table.name)
    return done


def run(oracle: OracleApp, engine: str, profile: Profile,
        stores: Callable[[], str] = lambda: ":memory:") -> Stats:
    """Run the profile's histories, each on a new store from ``stores`` (in memory by
    default); they must have exercised what they claim to check."""
    totals = Stats()
    run_state_machine_as_test(machine(oracle, engine, profile, totals, stores), settings=settings(
        max_examples=profile.examples, stateful_step_count=profile.steps, deadline=None,
        derandomize=profile.derandomize, report_multiple_bugs=False,
        database=None if profile.derandomize else settings.default.database,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                               HealthCheck.filter_too_much]))
    assert totals.accepted > 0 and totals.refused > 0, totals
    bounded = {q.name for q in oracle.plan.queries if q.bounded}
    assert bounded <= totals.compared_queries, f"never compared: {bounded - totals.compared_queries}"
    if any(q.level == "SI-3" for q in oracle.plan.queries):
        assert totals.refreshes > 0, totals
    return totals


# the two longest applications' short profile (75-115 s each) runs in CI's slow step
SLOW_NEW_APPS = ("messaging", "commerce")


@pytest.mark.parametrize("app", [pytest.param(a, marks=pytest.mark.slow) if a in SLOW_NEW_APPS
                                 else a for a in NEW_APPS])
def test_oracle_new_apps(app):
    run(oracle_app(app), "duckdb", DEFAULT_PROFILE)


@pytest.mark.parametrize("app", EXISTING_APPS)
def test_oracle_existing_apps(app):
    run(existing_app(app), "duckdb", DEFAULT_PROFILE)


@pytest.mark.parametrize("app", ["messaging"])
def test_oracle_store_engine(app):
    run(oracle_app(app), "store", DEFAULT_PROFILE)


# PostgreSQL answers each statement over a socket: `make test` runs fewer histories there,
# on two applications (the others, and the whole short profile, are marked slow)
POSTGRES_APPS = ("paper", "messaging")
POSTGRES_PROFILE = Profile(examples=3, steps=15, check_every=0, derandomize=True)


@pytest.mark.parametrize("app", POSTGRES_APPS)
def test_oracle_postgres(app, postgres_stores):
    """Histories of the short profile, each on a PostgreSQL store of its own."""
    oracle = oracle_app(app) if app in NEW_APPS else existing_app(app)
    run(oracle, "duckdb", POSTGRES_PROFILE, postgres_stores)


@pytest.mark.slow
@pytest.mark.extended
@pytest.mark.parametrize("app", NEW_APPS + EXISTING_APPS)
def test_oracle_postgres_short_profile(app, postgres_stores):
    """The whole short profile (10 histories), each on a PostgreSQL store of its own."""
    oracle = oracle_app(app) if app in NEW_APPS else existing_app(app)
    run(oracle, "duckdb", PROFILES["short"], postgres_stores)


@pytest.mark.slow
@pytest.mark.parametrize("app,engine", [(app, "duckdb") for app in NEW_APPS + EXISTING_APPS]
                         + [(app, "store") for app in NEW_APPS])
def test_oracle_long(app, engine):
    oracle = oracle_app(app) if app in NEW_APPS else existing_app(app)
    run(oracle, engine, PROFILES["long"])

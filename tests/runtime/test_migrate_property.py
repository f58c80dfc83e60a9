"""Property test of migrations: random pairs of plans (queries added, removed and renamed;
a column added; a CARDINALITY constraint added or tightened, which the rows may break),
random rows, writes running concurrently with the migration (a thread with a deployment of
the old plan), and writes after it. After migrating from plan A to plan B (or a refusal,
leaving A) every view equals its recomputation, every query equals its own SQL on the base
tables, no base row is lost, and writes keep it so. The long profile is marked slow."""
from __future__ import annotations

import tempfile
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import piql
from piql.runtime import migrate
from piql.runtime.errors import ConstraintError, DeploymentError
from piql.runtime.store import open_store
from tests.runtime.test_migrate import MINE, RENAMED, SAVES, SCHEMA, TAGGED, WHO
from tests.runtime.workload import (
    assert_ordered_match, normal, oracle, ordered_oracle, parameter_choices,
)

POOL = {
    "mine": MINE, "saves": SAVES, "renamed": RENAMED, "tagged": TAGGED, "who": WHO,
    "titles": "-- name: titleCount\nSELECT COUNT(*) AS n FROM bookmarks WHERE title = <title>;\n",
    "tagsOf": ("-- name: tagsOfUser\nSELECT t.tag, b.title FROM tags t JOIN bookmarks b "
               "ON b.userId = t.userId AND b.url = t.url WHERE b.userId = <userId>;\n"),
}
WIDER = SCHEMA.replace("title VARCHAR,", "title VARCHAR, note VARCHAR,")
# a constraint added (the rows may break it: one title per url), or tightened
CONSTRAINED = SCHEMA.replace("WITH CARDINALITY (url, 1000);",
                             "WITH CARDINALITY (url, 1000) WITH CARDINALITY (title, 1) PER (url);")
TIGHTER = SCHEMA.replace("(tag, 5)", "(tag, 2)")
ROW = st.tuples(st.integers(0, 5), st.sampled_from(["a.org", "b.org", "c.org", "d.org"]),
                st.sampled_from(["t0", "t1", None]), st.sampled_from(["db", "web", "sql"]))
PLANS = st.sets(st.sampled_from(sorted(POOL)), min_size=1)


def queries(names: set[str]) -> str:
    return "".join(POOL[n] for n in sorted(names))


def write(db, rows: list[tuple], start: int) -> None:
    for number, (user, url, title, tag) in enumerate(rows, start):
        if db.store.get("bookmarks", {"userId": user, "url": url}) is None:
            db.insert("bookmarks", userId=user, url=url, title=title, savedAt=number)
        if db.store.get("tags", {"userId": user, "url": url, "tag": tag}) is None:
            db.insert("tags", userId=user, url=url, tag=tag)


def assert_answers(db) -> None:
    for query in db.plan.queries:
        for params in parameter_choices(db, query):
            got = list(db.query(query.name, **params).rows)
            if query.query.block.order_by:
                assert_ordered_match(got, ordered_oracle(db, query, params),
                                     query.query.block.limit, (query.name, params))
            else:
                assert sorted(normal(got), key=repr) == sorted(
                    normal(oracle(db, query, params)), key=repr), (query.name, params)


class Concurrent(threading.Thread):
    """A thread writing ``rows`` while the migration runs, with a deployment of the old plan
    (``queries``): a write refused because the store moved to the new plan (``after`` on
    ``schema``) is made again with a deployment of the new one (as is the first, if the
    migration came first). What it raised is kept in ``error``."""

    def __init__(self, location: str, queries: str, after: str, schema: str,
                 rows: list[tuple], start: int) -> None:
        super().__init__()
        self.location, self.queries, self.after, self.schema = location, queries, after, schema
        self.rows, self.start_at = rows, start
        self.error: BaseException | None = None
        self.refused: set[tuple] = set()

    def newer(self):
        return piql.loads(self.schema, self.after).deploy(self.location, engine="store")

    def run(self) -> None:
        try:
            try:
                db = piql.loads(SCHEMA, self.queries).deploy(self.location, engine="store")
            except DeploymentError:  # migrated already
                db = self.newer()
            try:
                for number, row in enumerate(self.rows, self.start_at):
                    try:
                        self.write(db, row, number)
                    except DeploymentError as err:
                        assert "migrated to another plan" in str(err)
                        db.close()
                        db = self.newer()
                        self.write(db, row, number)
            finally:
                db.close()
        except BaseException as err:  # noqa: BLE001 - checked by the test
            self.error = err

    def write(self, db, row: tuple, number: int) -> None:
        """Write one row; one the new plan's constraints refuse is noted in ``refused``
        (its bookmark, if that was refused too, until a later row adds it)."""
        try:
            write(db, [row], number)
            self.refused.discard(row[:2])  # a later row may add the bookmark one refused
        except ConstraintError:
            if db.store.get("bookmarks", {"userId": row[0], "url": row[1]}) is None:
                self.refused.add(row[:2])


def check_migration(before: set[str], after: set[str], schema: str, rows: list[tuple],
                    during: list[tuple], later: list[tuple]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        location = str(Path(folder) / "app.db")
        db = piql.loads(SCHEMA, queries(before)).deploy(location, engine="store")
        write(db, rows, 0)
        db.close()
        plan = piql.loads(schema, queries(after)).plan
        writer = Concurrent(location, queries(before), queries(after), schema, during,
                            len(rows))
        writer.start()
        store = open_store(location)
        try:
            migrate.apply(store, migrate.prepare(store, plan), force=True)
            migrated = True
        except ConstraintError as err:  # a constraint added that the rows break
            assert "nothing was migrated" in str(err)
            migrated = False
        finally:
            writer.join()
        assert writer.error is None, writer.error
        if migrated:
            assert migrate.prepare(store, plan).diff.empty  # a second run is a no-op
        store.close()
        schema, names = (schema, after) if migrated else (SCHEMA, before)
        db = piql.loads(schema, queries(names)).deploy(location, engine="store")
        assert not db.installed and db.check().consistent
        expected = {(u, url) for u, url, _, _ in rows + during} - writer.refused
        assert {(r[0], r[1]) for r in db.rows("bookmarks")} == expected  # no base row lost
        assert_answers(db)
        try:
            write(db, later, len(rows) + len(during))
        except ConstraintError:
            pass  # a later row breaking a constraint is refused, changing nothing
        assert db.check().consistent
        assert_answers(db)
        db.close()


SCHEMAS = st.sampled_from([SCHEMA, WIDER, CONSTRAINED, TIGHTER])
RUN = (PLANS, PLANS, SCHEMAS, st.lists(ROW, max_size=25), st.lists(ROW, max_size=8),
       st.lists(ROW, max_size=10))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(*RUN)
def test_every_query_of_the_new_plan_answers_right_after_migrating(
        before, after, schema, rows, during, later):
    check_migration(before, after, schema, rows, during, later)


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(*RUN)
def test_every_query_of_the_new_plan_answers_right_after_migrating_long(
        before, after, schema, rows, during, later):
    check_migration(before, after, schema, rows, during, later)

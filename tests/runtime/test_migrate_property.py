"""Property test of migrations: random pairs of plans on one schema (queries added, removed
and renamed, a column added), random rows and writes; after migrating from plan A to plan B
every view equals its recomputation, every query of B equals its own SQL on the base
tables, no base row is lost, and writes after the migration keep it so."""
from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import piql
from piql.runtime import migrate
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


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(PLANS, PLANS, st.booleans(), st.lists(ROW, max_size=25), st.lists(ROW, max_size=10))
def test_every_query_of_the_new_plan_answers_right_after_migrating(
        before, after, wider, rows, later):
    with tempfile.TemporaryDirectory() as folder:
        location = str(Path(folder) / "app.db")
        db = piql.loads(SCHEMA, queries(before)).deploy(location, engine="store")
        write(db, rows, 0)
        counts = {t: db.store.sql(f"SELECT COUNT(*) FROM {t}")[0][0] for t in ("bookmarks", "tags")}
        db.close()
        plan = piql.loads(WIDER if wider else SCHEMA, queries(after)).plan
        store = open_store(location)
        migrate.apply(store, migrate.prepare(store, plan))
        assert migrate.prepare(store, plan).diff.empty  # a second run is a no-op
        store.close()
        db = piql.loads(WIDER if wider else SCHEMA, queries(after)).deploy(location,
                                                                          engine="store")
        assert not db.installed and db.check().consistent
        assert {t: db.store.sql(f"SELECT COUNT(*) FROM {t}")[0][0] for t in counts} == counts
        assert_answers(db)
        write(db, later, len(rows))
        assert db.check().consistent
        assert_answers(db)
        db.close()

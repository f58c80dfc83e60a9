"""Scale independence measured: grow the data 100x; no SI-0/1/2 query and no maintained
write does more operations than before (and none exceeds its bound)."""
from __future__ import annotations

import pytest

import piql
from tests.conftest import EXAMPLES, PAPER_QUERIES, PAPER_SCHEMA

TAGS = ("t0", "t1", "t2", "t3", "t4")


def paper_data(db, n: int) -> None:
    db.load("Documents", [(d, d * 7 % (n * 10), f"doc {d}") for d in range(1, n + 1)])
    db.load("Tags", [(d, TAGS[(d + k) % 5], d) for d in range(1, n + 1) for k in range(4)])


def social_data(db, n: int) -> None:
    db.load("users", [(u, f"user{u}", f"u{u}@x", u) for u in range(1, n + 1)])
    db.load("follows", [(u, (u + k - 1) % n + 1, u * 10 + k)
                        for u in range(1, n + 1) for k in (1, 2, 3)])
    db.load("posts", [(p, (p - 1) // 2 + 1, p * 3, f"post {p}") for p in range(1, 2 * n + 1)])
    db.load("likes", [(p, (p + k - 1) % n + 1, p * 5 + k) for p in range(1, 2 * n + 1) for k in (1, 2)])
    db.load("post_tags", [(p, TAGS[(p + k) % 5]) for p in range(1, 2 * n + 1) for k in range(2)])


APPS = {
    "paper": (PAPER_SCHEMA, PAPER_QUERIES, paper_data, {
        "tagsOfDoc": {"doc": 3}, "newestWithTag": {"tag": "t1"},
        "twoTags": {"tag1": "t1", "tag2": "t2"}, "countTags": {"tag": "t1"},
        "countTagsWindowed": {"tag": "t1", "epoch": 0}, "popularTags": {},
    }, [
        ("insert", "Tags", {"docId": 3, "tag": "extra", "timestamp": 3}),
        ("delete", "Tags", {"docId": 3, "tag": "extra"}),
        ("insert", "Documents", {"docId": 0, "timestamp": 5, "text": "new"}),
        ("delete", "Documents", {"docId": 0}),
    ]),
    "social": (EXAMPLES / "social" / "schema.sql", EXAMPLES / "social" / "queries.sql", social_data, {
        "userById": {"userId": 3}, "following": {"userId": 3}, "postTags": {"postId": 3},
        "postWithAuthor": {"postId": 3}, "userByEmail": {"email": "u3@x"},
        "userPosts": {"userId": 3}, "userPostsBetween": {"userId": 3, "since": 0, "until": 100},
        "followers": {"userId": 3}, "homeTimeline": {"userId": 3}, "followerCount": {"userId": 3},
        "friendPostCount": {"userId": 3},
        "likeCount": {"postId": 3}, "twoTags": {"tag1": "t1", "tag2": "t2"},
    }, [
        ("insert", "likes", {"postId": 3, "userId": 1, "likedAt": 1}),
        ("delete", "likes", {"postId": 3, "userId": 1}),
        ("insert", "post_tags", {"postId": 4, "tag": "extra"}),
        ("delete", "post_tags", {"postId": 4, "tag": "extra"}),
        ("insert", "follows", {"follower": 3, "followee": 9, "since": 1}),
        ("delete", "follows", {"follower": 3, "followee": 9}),
        ("insert", "posts", {"postId": 0, "author": 3, "createdAt": 1, "body": "new"}),
        ("delete", "posts", {"postId": 0}),
    ]),
}


def measure(app_name: str, n: int) -> dict[str, int]:
    schema, queries, load, probes, writes = APPS[app_name]
    app = piql.load(schema, queries)
    db = app.deploy()
    load(db, n)
    ops: dict[str, int] = {}
    for query in app.plan.queries:
        if query.level in ("SI-0", "SI-1", "SI-2"):
            result = db.query(query.name, **probes[query.name])  # strict: ops <= bound
            ops[query.name] = result.ops
    for event, table, values in writes:
        report = (db.insert if event == "insert" else db.delete)(table, **values)
        ops[f"{event} {table}"] = report.ops
        for rule, measured, bound in report.rules:
            assert measured <= bound
            ops[rule] = measured
    db.close()
    return ops


# 130k documents per app: two and a half minutes, so CI's slow step (docs/testing.md)
@pytest.mark.slow
def test_operations_do_not_grow_with_100x_the_data():
    for app in APPS:
        # 1300 documents already fill popularTags' 5000-tuple window
        small, large = measure(app, 1300), measure(app, 130_000)
        assert set(small) == set(large)
        grown = {k: (small[k], large[k]) for k in small if large[k] > small[k]}
        assert not grown, f"{app}: operations grew with the data: {grown}"
        # the probes reach real data: most queries read more than one tuple
        assert sum(1 for v in large.values() if v > 1) >= len(large) // 2

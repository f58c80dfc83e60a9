"""The social example end to end: plan, deploy on an embedded store, load generated data,
run every query and one maintained write, and print what each cost beside its bound.

    python examples/social/demo.py [--users N]
"""
from __future__ import annotations

import argparse
import random
import time
from pathlib import Path

import piql
from piql.report import table

HERE = Path(__file__).parent
TAGS = [f"tag{i}" for i in range(30)]


def generate(db, users: int, seed: int = 7) -> None:
    """Users who follow a few others, write posts, like and tag them (with bulk loads)."""
    rng = random.Random(seed)
    now = 1_700_000_000_000  # likes are stamped within the hour starting 1_699_999_200_000
    db.load("users", [(u, f"user{u}", f"user{u}@example.com", now + u) for u in range(1, users + 1)])
    follows = {(u, rng.randint(1, users)) for u in range(1, users + 1) for _ in range(8)}
    db.load("follows", [(a, b, now + i) for i, (a, b) in enumerate(sorted(follows))])
    posts = users * 5
    db.load("posts", [(p, rng.randint(1, users), now + 1000 * p, f"post number {p}")
                      for p in range(1, posts + 1)])
    likes = {(rng.randint(1, posts), rng.randint(1, users)) for _ in range(posts * 3)}
    db.load("likes", [(p, u, now + i) for i, (p, u) in enumerate(sorted(likes))])
    db.load("post_tags", [(p, t) for p in range(1, posts + 1) for t in rng.sample(TAGS, 3)])


SAMPLES = {  # parameters for each query of examples/social/queries.sql
    "userById": {"userId": 42}, "following": {"userId": 42}, "postTags": {"postId": 42},
    "postWithAuthor": {"postId": 42}, "userByEmail": {"email": "user42@example.com"},
    "userPosts": {"userId": 42},
    "userPostsBetween": {"userId": 42, "since": 0, "until": 2_000_000_000_000},
    "followers": {"userId": 42}, "homeTimeline": {"userId": 42}, "followerCount": {"userId": 42},
    "friendPostCount": {"userId": 42},
    "likeCount": {"postId": 42}, "twoTags": {"tag1": "tag1", "tag2": "tag2"},
    "latestPosts": {}, "activeAuthors": {}, "trending": {"hour": 1_699_999_200_000},
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=2000)
    args = parser.parse_args()

    app = piql.load(HERE / "schema.sql", HERE / "queries.sql")
    db = app.deploy(":memory:")
    started = time.perf_counter()
    generate(db, args.users)
    loaded = {t.name: len(db.rows(t.name)) for t in app.plan.catalog.tables}
    print(f"loaded {sum(loaded.values())} rows ({', '.join(f'{n} {t}' for t, n in loaded.items())}) "
          f"in {time.perf_counter() - started:.1f} s")
    for report in db.refresh(now_ms=1_700_000_000_000):
        print(f"refreshed {report.view}: {report.rows} rows, at most {report.max_partition_reads} "
              f"reads in one of {report.partitions} partitions (bound {report.per_partition_bound})")

    results = []
    for query in app.plan.queries:
        if not query.bounded:
            results.append((query.name, query.level, "-", "-", "not run: no bounded plan"))
            continue
        result = db.query(query.name, **SAMPLES[query.name])
        first = ", ".join(map(str, result.rows[0])) if result.rows else ""
        results.append((query.name, query.level, len(result), f"{result.ops} / {result.bound}",
                        first[:48]))
    print()
    print(table.render(["query", "level", "rows", "ops / bound", "first row"], results))

    report = db.insert("likes", postId=42, userId=7, likedAt=1)
    print(f"\ninsert into likes: {report.ops} operations (bound {report.bound}), "
          f"rules: " + ", ".join(f"{name} {ops}/{bound}" for name, ops, bound in report.rules))
    print(f"likeCount of post 42 is now {db.query('likeCount', postId=42).rows[0][0]}")
    print("consistency check:", "every view equals its recomputation"
          if db.check().consistent else db.check())
    adapting(db, args.users)


def adapting(db, users: int) -> None:
    """The feed and the neighbourhood aggregate adapting to rates (docs/adaptive.md): a
    few users read all day, everyone posts now and then; then ``db.adapt()`` pushes the
    edges whose reads outweigh their writes, and ``db.adapt_overlay()`` pushes the overlay
    nodes EAGr's min-cut chooses."""
    rng = random.Random(11)
    readers = range(1, 21)
    before = {u: db.query("homeTimeline", userId=u).ops for u in readers}
    counts = {u: db.query("friendPostCount", userId=u).ops for u in readers}
    post = users * 5
    for _ in range(20):
        for u in readers:
            db.query("homeTimeline", userId=u)
            db.query("friendPostCount", userId=u)
        for _ in range(5):
            post += 1
            db.insert("posts", postId=post, author=rng.randint(1, users),
                      createdAt=1_800_000_000_000 + post, body="new")
    (feed,) = db.adapt("homeTimeline")
    overlay = db.adapt_overlay("friendPostCount")
    after = {u: db.query("homeTimeline", userId=u).ops for u in readers}
    counted = {u: db.query("friendPostCount", userId=u).ops for u in readers}
    print(f"\nadapting homeTimeline to rates (20 users reading 20 times, 100 posts): "
          f"{feed.push_edges} edges push, the rest pull ({feed.ops} ops to switch; a pull "
          f"of one producer measured at {feed.pull_cost + 1:.1f} ops)")
    print(f"  a frequent reader's timeline: {sum(before.values()) / 20:.0f} ops pulled -> "
          f"{sum(after.values()) / 20:.0f} ops per read")
    print(f"adapting friendPostCount: an EAGr overlay, sharing index "
          f"{overlay.sharing_index:.3f}, {overlay.push_nodes} nodes push, "
          f"{overlay.pull_nodes} pull: {sum(counts.values()) / 20:.0f} -> "
          f"{sum(counted.values()) / 20:.0f} ops per read")


if __name__ == "__main__":
    main()

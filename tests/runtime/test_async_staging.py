"""Asynchronous staging and periodic views (issue 20): TPC-W deployed with every query
``-- maintenance: async``, so BuyConfirm's writes (an order, its lines, the card, the
stock, the emptied cart) queue their staging rows and epoch marks instead of writing them.
A refresh drains the queue first: after random BuyConfirm-like writes, drains and
refreshes, every view equals the synchronous deployment's (staging, periodic, and the
search views) and its recomputation; refused writes queue nothing; an update changing no
column an asynchronous view reads (the stock) queues nothing. On SQLite and PostgreSQL."""
from __future__ import annotations

import random

import pytest

import piql
from piql.bench.tpcw import EXAMPLE
from piql.runtime.deployment import Deployment
from piql.runtime.errors import ConstraintError

HOUR = 3_600_000
START = 1000 * HOUR
ITEMS = 8


def tpcw(mode: str):
    return piql.loads((EXAMPLE / "schema.sql").read_text(),
                      (EXAMPLE / "queries.sql").read_text(), maintenance=mode)._plan_for(3)


def item(i: int, **changes) -> dict:
    return {"i_id": i, "i_title": f"book {i}", "i_a_id": 1 + i % 2, "i_pub_date": 0,
            "i_publisher": "p", "i_subject": "ARTS" if i % 2 else "HISTORY", "i_desc": "",
            **{f"i_related{k}": 1 for k in range(1, 6)}, "i_thumbnail": "", "i_image": "",
            "i_srp": 10.0, "i_cost": 9.5, "i_avail": 0, "i_stock": 20, "i_isbn": "",
            "i_page": 100, "i_backing": "", "i_dimensions": "", **changes}


def populate(db: Deployment) -> None:
    db.insert("country", co_id=1, co_name="Spain", co_exchange=1.0, co_currency="Euro")
    for a in (1, 2):
        db.insert("author", a_id=a, a_fname=f"f{a}", a_lname=f"l{a}", a_mname=None, a_dob=0,
                  a_bio="")
    for i in range(1, ITEMS + 1):
        db.insert("item", **item(i))
    db.insert("address", addr_id=1, addr_street1="s", addr_street2="", addr_city="c",
              addr_state="", addr_zip="1", addr_co_id=1)
    db.insert("customer", c_id=1, c_uname="u1", c_passwd="p", c_fname="f", c_lname="l",
              c_addr_id=1, c_phone="", c_email="", c_since=0, c_last_login=0, c_login=0,
              c_expiration=0, c_discount=0.1, c_balance=0.0, c_ytd_pmt=0.0, c_birthdate=0,
              c_data="")
    db.insert("shopping_cart", sc_id=1, sc_time=0)
    db.drain()


def order(o_id: int, when: int, **changes) -> dict:
    return {"o_id": o_id, "o_c_id": 1, "o_date": when, "o_sub_total": 10.0, "o_tax": 0.8,
            "o_total": 13.8, "o_ship_type": "AIR", "o_ship_date": when, "o_bill_addr_id": 1,
            "o_ship_addr_id": 1, "o_status": "PENDING", **changes}


def buy_confirm(dbs: list[Deployment], chooser: random.Random, o_id: int, stock: dict) -> None:
    """One BuyConfirm: fill the cart, then the order, its lines, the card transaction, the
    stock of every item bought and the emptied cart (as piql.bench.tpcw_mix writes it)."""
    when = START + chooser.randrange(3) * HOUR + chooser.randrange(HOUR)
    bought = chooser.sample(range(1, ITEMS + 1), chooser.randint(1, 3))
    quantities = {i: chooser.randint(1, 4) for i in bought}
    for db in dbs:
        for i in bought:
            db.insert("shopping_cart_line", scl_sc_id=1, scl_i_id=i, scl_qty=quantities[i])
        db.insert("orders", **order(o_id, when))
        for number, i in enumerate(sorted(bought), start=1):
            db.insert("order_line", ol_id=number, ol_o_id=o_id, ol_i_id=i, ol_qty=quantities[i],
                      ol_discount=0.01, ol_comments="c")
        db.insert("cc_xacts", cx_o_id=o_id, cx_type="VISA", cx_num="1", cx_name="n",
                  cx_expire=when, cx_auth_id="a", cx_xact_amt=13.8, cx_xact_date=when,
                  cx_co_id=1)
    for i in bought:
        stock[i] = stock[i] - quantities[i] + (21 if stock[i] - quantities[i] < 10 else 0)
    for db in dbs:
        for i in bought:
            db.update("item", **item(i, i_stock=stock[i]))
        for i in bought:
            db.delete("shopping_cart_line", scl_sc_id=1, scl_i_id=i)


def other_change(dbs: list[Deployment], chooser: random.Random, orders: int) -> None:
    """Changes the views do read: a line's quantity, a title, an order's date."""
    roll, o_id = chooser.random(), chooser.randrange(1, orders + 1)
    for db in dbs:
        if roll < 0.4:
            found = db.store.sql(db.store.dialect == "postgres" and
                                 "SELECT ol_id, ol_i_id FROM order_line WHERE ol_o_id = %(o)s"
                                 or "SELECT ol_id, ol_i_id FROM order_line WHERE ol_o_id = :o",
                                 {"o": o_id})
            ol_id, i_id = sorted(found)[0]
            db.update("order_line", ol_id=ol_id, ol_o_id=o_id, ol_i_id=i_id, ol_qty=7,
                      ol_discount=0.01, ol_comments="c")
        elif roll < 0.7:
            db.update("item", **item(1 + o_id % ITEMS, i_title=f"retitled {o_id}"))
        else:
            db.update("orders", **order(o_id, START + 2 * HOUR + o_id, o_status="SHIPPED"))


def run(new_store, seed: int, steps: int) -> tuple[Deployment, Deployment]:
    chooser = random.Random(seed)
    sync = Deployment(tpcw("sync"), new_store(), engine="store")
    lazy = Deployment(tpcw("async"), new_store(), engine="store")
    dbs = [sync, lazy]
    for db in dbs:
        populate(db)
    stock = {i: 20 for i in range(1, ITEMS + 1)}
    for o_id in range(1, steps + 1):
        buy_confirm(dbs, chooser, o_id, stock)
        roll = chooser.random()
        if roll < 0.3:
            other_change(dbs, chooser, o_id)
        if roll < 0.2:
            lazy.drain(limit=chooser.randrange(1, 5))
        elif roll < 0.3:
            now = START + chooser.randrange(3) * HOUR
            assert views(sync, now) == views(lazy, now)  # a refresh drains first
    return sync, lazy


def views(db: Deployment, now: int) -> dict[str, list]:
    for hour in range(3):
        db.refresh(now_ms=START + hour * HOUR)
    db.refresh(now_ms=now)
    assert len(db.maintainer.queue or []) == 0
    return {v.name: sorted(db.rows(v.name), key=repr) for v in db.views}


@pytest.mark.parametrize("seed", range(3))
def test_buy_confirms_drained_and_refreshed_equal_the_synchronous_views(new_store, seed):
    sync, lazy = run(new_store, seed, 25)
    assert {v.name for v in lazy.views if v.maintenance.value == "async"} == {
        v.name for v in lazy.views}  # staging and periodic views too
    assert views(sync, START + 2 * HOUR) == views(lazy, START + 2 * HOUR)
    report = lazy.check()
    assert report.consistent, report
    hour = START + 2 * HOUR
    for subject in ("ARTS", "HISTORY"):
        assert lazy.query("best_sellers", subject=subject, hour=hour).rows == \
            sync.query("best_sellers", subject=subject, hour=hour).rows


def test_a_buy_confirm_queues_its_staging_rows_and_marks(new_store):
    db = Deployment(tpcw("async"), new_store(), engine="store")
    populate(db)
    buy_confirm([db], random.Random(1), 1, {i: 20 for i in range(1, ITEMS + 1)})
    queued = {entry.base for entry in db.maintainer.queue.head(100)}
    assert queued == {"orders", "order_line"}  # not the stock, the card or the cart
    assert db.rows("best_sellersStaging") == []  # the staging row waits in the queue
    db.refresh(now_ms=START)
    assert len(db.maintainer.queue) == 0 and len(db.rows("best_sellersStaging")) == 1


def test_an_update_of_a_column_no_view_reads_queues_nothing(new_store):
    db = Deployment(tpcw("async"), new_store(), engine="store")
    populate(db)
    db.update("item", **item(3, i_stock=5))
    assert len(db.maintainer.queue) == 0
    db.update("item", **item(3, i_stock=5, i_title="a new title"))  # the search views read it
    assert len(db.maintainer.queue) == 1
    db.update("item", **item(3, i_stock=4, i_title="a new title"))  # queued: stays as it is
    assert len(db.maintainer.queue) == 1
    assert db.check().consistent
    assert [r for r in db.rows("search_by_author_view") if "a new title" in r]


def test_an_unseen_update_is_one_statement_on_sqlite(tmp_path):
    """BuyConfirm's stock update: one UPDATE that applies only while the columns the views
    read (and the periodic views freeze) keep their values; a change of one takes piql's
    path (queued, or refused naming the view), as does a missing row."""
    db = Deployment(tpcw("async"), str(tmp_path / "s.db"), engine="store")
    populate(db)
    assert set(db.maintainer.unseen_at_once["item"][1]) == {"i_title", "i_a_id", "i_subject"}
    writes = db.store.counter.writes
    db.update("item", **item(3, i_stock=5))
    assert db.store.counter.writes == writes + 1 and len(db.maintainer.queue) == 0
    assert db.store.sql("SELECT i_stock FROM item WHERE i_id = 3") == [(5,)]
    db.update("item", **item(3, i_stock=4, i_title="retitled"))  # seen: piql's path
    assert len(db.maintainer.queue) == 1
    with pytest.raises(ConstraintError, match="periodic view best_sellers"):
        db.update("item", **item(3, i_subject="ARTS" if 3 % 2 == 0 else "HISTORY"))
    with pytest.raises(ConstraintError, match="item has no row"):
        db.update("item", **item(99))
    with pytest.raises(ConstraintError, match="FOREIGN KEY"):
        db.update("item", **item(3, i_stock=1, i_a_id=7, i_title="retitled"))  # no author 7 (read: piql's path)
    db.update("item", **item(3, i_stock=4, i_title="retitled"))
    assert db.check().consistent


def test_refused_buy_confirm_writes_queue_nothing(new_store):
    db = Deployment(tpcw("async"), new_store(), engine="store")
    populate(db)
    db.insert("orders", **order(1, START))
    before = len(db.maintainer.queue)
    refused = [
        lambda: db.insert("orders", **order(1, START)),  # its key is taken
        lambda: db.insert("order_line", ol_id=1, ol_o_id=99, ol_i_id=1, ol_qty=1,
                          ol_discount=0.0, ol_comments=""),  # no such order
        lambda: db.insert("order_line", ol_id=1, ol_o_id=1, ol_i_id=99, ol_qty=1,
                          ol_discount=0.0, ol_comments=""),  # no such item
        lambda: db.update("orders", **order(2, START)),  # no such order
    ]
    for write in refused:
        with pytest.raises(ConstraintError):
            write()
        assert len(db.maintainer.queue) == before
    db.refresh(now_ms=START)
    assert len(db.rows("best_sellersStaging")) == 1

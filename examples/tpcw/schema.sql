-- examples/tpcw/schema.sql: the TPC-W v1.8 bookstore (tpc.org/tpcw), as piql reads it.
--
-- Tables and columns keep TPC-W's names (clause 1.3). Dates are BIGINT
-- milliseconds since the epoch, money is DOUBLE. What piql adds:
--
--   item_title_word            one row per word of an item's title: the title
--                              search reads it instead of LIKE '%word%' (paper §8.2)
--   TEMPORAL orders.o_date     orders arrive in time order: an index or view led
--                              by o_date would send every new order to one partition
--   WITH CARDINALITY ...       the limits TPC-W's own rules imply (one account per
--                              user name, 1-5 lines per order, 10,000 items ...) or
--                              that a real bookstore would enforce (cart size)

CREATE TABLE country (
    co_id       BIGINT PRIMARY KEY,
    co_name     VARCHAR,
    co_exchange DOUBLE,
    co_currency VARCHAR
) WITH CARDINALITY (co_id, 1) PER (co_name);  -- country names are unique

CREATE TABLE author (
    a_id    BIGINT PRIMARY KEY,
    a_fname VARCHAR,
    a_lname VARCHAR,
    a_mname VARCHAR,
    a_dob   BIGINT,
    a_bio   VARCHAR
);

-- An author writes at most 100 of the store's books (TPC-W deals 4 on average).
CREATE TABLE item (
    i_id         BIGINT PRIMARY KEY,
    i_title      VARCHAR,
    i_a_id       BIGINT NOT NULL,
    i_pub_date   BIGINT,
    i_publisher  VARCHAR,
    i_subject    VARCHAR,
    i_desc       VARCHAR,
    i_related1   BIGINT,
    i_related2   BIGINT,
    i_related3   BIGINT,
    i_related4   BIGINT,
    i_related5   BIGINT,
    i_thumbnail  VARCHAR,
    i_image      VARCHAR,
    i_srp        DOUBLE,
    i_cost       DOUBLE,
    i_avail      BIGINT,
    i_stock      BIGINT,
    i_isbn       VARCHAR,
    i_page       BIGINT,
    i_backing    VARCHAR,
    i_dimensions VARCHAR,
    FOREIGN KEY (i_a_id) REFERENCES author (a_id)
) WITH CARDINALITY (i_id, 100) PER (i_a_id);

-- The words of a title, lowercase: at most 10 per item. A common word may be in
-- any number of titles.
CREATE TABLE item_title_word (
    itw_word VARCHAR,
    itw_i_id BIGINT,
    PRIMARY KEY (itw_word, itw_i_id),
    FOREIGN KEY (itw_i_id) REFERENCES item (i_id)
) WITH CARDINALITY (itw_word, 10) PER (itw_i_id);

CREATE TABLE address (
    addr_id      BIGINT PRIMARY KEY,
    addr_street1 VARCHAR,
    addr_street2 VARCHAR,
    addr_city    VARCHAR,
    addr_state   VARCHAR,
    addr_zip     VARCHAR,
    addr_co_id   BIGINT,
    FOREIGN KEY (addr_co_id) REFERENCES country (co_id)
);

-- c_uname is unique (TPC-W clause 4.7.1 derives it from c_id).
CREATE TABLE customer (
    c_id         BIGINT PRIMARY KEY,
    c_uname      VARCHAR,
    c_passwd     VARCHAR,
    c_fname      VARCHAR,
    c_lname      VARCHAR,
    c_addr_id    BIGINT,
    c_phone      VARCHAR,
    c_email      VARCHAR,
    c_since      BIGINT,
    c_last_login BIGINT,
    c_login      BIGINT,
    c_expiration BIGINT,
    c_discount   DOUBLE,
    c_balance    DOUBLE,
    c_ytd_pmt    DOUBLE,
    c_birthdate  BIGINT,
    c_data       VARCHAR,
    FOREIGN KEY (c_addr_id) REFERENCES address (addr_id)
) WITH CARDINALITY (c_id, 1) PER (c_uname);

-- o_date is TEMPORAL: every new order carries the newest date.
CREATE TABLE orders (
    o_id           BIGINT PRIMARY KEY,
    o_c_id         BIGINT,
    o_date         BIGINT TEMPORAL,
    o_sub_total    DOUBLE,
    o_tax          DOUBLE,
    o_total        DOUBLE,
    o_ship_type    VARCHAR,
    o_ship_date    BIGINT,
    o_bill_addr_id BIGINT,
    o_ship_addr_id BIGINT,
    o_status       VARCHAR,
    FOREIGN KEY (o_c_id) REFERENCES customer (c_id),
    FOREIGN KEY (o_bill_addr_id) REFERENCES address (addr_id),
    FOREIGN KEY (o_ship_addr_id) REFERENCES address (addr_id)
);

-- An order has at most 100 lines (one per item of the cart it came from).
CREATE TABLE order_line (
    ol_id       BIGINT,
    ol_o_id     BIGINT,
    ol_i_id     BIGINT,
    ol_qty      BIGINT,
    ol_discount DOUBLE,
    ol_comments VARCHAR,
    PRIMARY KEY (ol_o_id, ol_id),
    FOREIGN KEY (ol_o_id) REFERENCES orders (o_id),
    FOREIGN KEY (ol_i_id) REFERENCES item (i_id)
) WITH CARDINALITY (ol_id, 100);

CREATE TABLE cc_xacts (
    cx_o_id      BIGINT PRIMARY KEY,
    cx_type      VARCHAR,
    cx_num       VARCHAR,
    cx_name      VARCHAR,
    cx_expire    BIGINT,
    cx_auth_id   VARCHAR,
    cx_xact_amt  DOUBLE,
    cx_xact_date BIGINT,
    cx_co_id     BIGINT,
    FOREIGN KEY (cx_o_id) REFERENCES orders (o_id),
    FOREIGN KEY (cx_co_id) REFERENCES country (co_id)
);

CREATE TABLE shopping_cart (
    sc_id   BIGINT PRIMARY KEY,
    sc_time BIGINT
);

-- A cart holds at most 100 different items.
CREATE TABLE shopping_cart_line (
    scl_sc_id BIGINT,
    scl_i_id  BIGINT,
    scl_qty   BIGINT,
    PRIMARY KEY (scl_sc_id, scl_i_id),
    FOREIGN KEY (scl_sc_id) REFERENCES shopping_cart (sc_id),
    FOREIGN KEY (scl_i_id) REFERENCES item (i_id)
) WITH CARDINALITY (scl_i_id, 100);

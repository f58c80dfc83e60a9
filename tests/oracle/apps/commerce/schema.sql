-- An oracle app of the commerce shape: customers place orders of products, stock
-- sits in warehouses. Written for the differential harness (tests/oracle).
-- Amounts are integer cents (exact SUMs), prices are DOUBLE, region and
-- category are nullable, placed is a TEMPORAL creation time.

CREATE TABLE customers (
    id     BIGINT PRIMARY KEY,
    name   VARCHAR,
    region VARCHAR,
    since  BIGINT TEMPORAL
);

-- "group" (a keyword as a column name) checks that piql quotes identifiers.
CREATE TABLE products (
    sku      BIGINT PRIMARY KEY,
    title    VARCHAR,
    category VARCHAR,
    price    DOUBLE,
    "group"  VARCHAR
);

CREATE TABLE orders (
    id       BIGINT PRIMARY KEY,
    customer BIGINT,
    placed   BIGINT TEMPORAL,
    status   VARCHAR,
    total    BIGINT,
    FOREIGN KEY (customer) REFERENCES customers (id)
);

-- At most 4 lines per order.
CREATE TABLE order_lines (
    order_id BIGINT,
    line     INT,
    sku      BIGINT,
    qty      INT,
    amount   BIGINT,
    PRIMARY KEY (order_id, line),
    FOREIGN KEY (order_id) REFERENCES orders (id),
    FOREIGN KEY (sku) REFERENCES products (sku)
) WITH CARDINALITY (line, 4);

-- A product is stocked in at most 3 warehouses.
CREATE TABLE inventory (
    sku       BIGINT,
    warehouse VARCHAR,
    stock     BIGINT,
    PRIMARY KEY (sku, warehouse),
    FOREIGN KEY (sku) REFERENCES products (sku)
) WITH CARDINALITY (warehouse, 3);

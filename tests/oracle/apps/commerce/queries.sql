-- The commerce oracle app's queries: every level piql supports.

-- name: orderById
SELECT id, customer, placed, status, total FROM orders WHERE id = <id>;

-- name: orderLines
SELECT line, sku, qty, amount FROM order_lines WHERE order_id = <order>;

-- name: orderWithCustomer
SELECT o.id, o.total, c.name, c.region
FROM orders o JOIN customers c ON c.id = o.customer
WHERE o.id = <order>;

-- name: stockOfProduct
-- At most 3 warehouses: aggregated on the fly (SI-0).
SELECT COUNT(*) AS warehouses, SUM(stock) AS stock FROM inventory WHERE sku = <sku>;

-- name: linesWithProducts
SELECT l.line, p.title, p.price, l.qty
FROM order_lines l JOIN products p ON p.sku = l.sku
WHERE l.order_id = <order>;

-- name: recentOrders
SELECT id, placed, total FROM orders WHERE customer = <customer> ORDER BY placed DESC LIMIT 3;

-- name: biggestOrders
-- total is nullable and ties often.
SELECT id, total FROM orders WHERE customer = <customer> ORDER BY total DESC LIMIT 2;

-- name: cheapestInCategory
-- Issue 12, item 3: a nullable ORDER BY column (price) in a bounded read.
SELECT sku, price FROM products WHERE category = <category> ORDER BY price LIMIT 3;

-- name: ordersInStatus
SELECT COUNT(*) AS orders, SUM(total) AS revenue, AVG(total) AS mean
FROM orders WHERE status = <status>;

-- name: customersInRegion
-- Issue 12, item 3: region is nullable and becomes the view's key.
SELECT COUNT(*) AS customers FROM customers WHERE region = <region>;

-- name: salesOfProduct
SELECT COUNT(*) AS lines, SUM(qty) AS units, SUM(amount) AS revenue, AVG(amount) AS mean
FROM order_lines WHERE sku = <sku>;

-- name: categoryPrices
-- Sums of a DOUBLE column (prices may be huge, negative, zero).
SELECT COUNT(*) AS products, SUM(price) AS total, AVG(price) AS mean
FROM products WHERE category = <category>;

-- name: productsInGroup
-- A column named with a keyword, in a view's key.
SELECT COUNT(*) AS products FROM products WHERE "group" = <grp>;

-- name: customerSpend
-- An aggregate over a join: every line of every order of a customer.
SELECT COUNT(*) AS lines, SUM(l.amount) AS spend, AVG(l.qty) AS mean_qty
FROM orders o, order_lines l
WHERE l.order_id = o.id AND o.customer = <customer>;

-- name: categoryRevenue
SELECT SUM(l.amount) AS revenue, COUNT(*) AS lines
FROM order_lines l, products p
WHERE l.sku = p.sku AND p.category = <category>;

-- name: statusOfCustomer
-- Two parameters on one table: a view keyed (customer, status).
SELECT COUNT(*) AS orders, SUM(total) AS revenue
FROM orders WHERE customer = <customer> AND status = <status>;

-- name: topLinesOfOrder
-- Top-k by an aggregate over a CARDINALITY-bounded group (at most 4 lines).
SELECT sku, SUM(qty) AS units
FROM order_lines
WHERE order_id = <order>
GROUP BY sku
ORDER BY SUM(qty) DESC
LIMIT 2;

-- name: cheapestInWarehouse
-- Issue 12, item 3: an SI-2 join view ordered by a nullable column of the joined table.
SELECT p.sku, p.price
FROM inventory i, products p
WHERE i.sku = p.sku AND i.warehouse = <warehouse>
ORDER BY p.price
LIMIT 3;

-- name: allLines
-- Issue 12, items 7 and 15: a global aggregate (no GROUP BY, no parameters).
SELECT COUNT(*) AS lines, SUM(amount) AS revenue FROM order_lines;

-- name: latestOrders
-- periodic: 1 min
SELECT id, customer, placed FROM orders ORDER BY placed DESC LIMIT 4;

-- name: hourlyRevenue
-- periodic: 1 min
SELECT COUNT(*) AS orders, SUM(total) AS revenue, AVG(total) AS mean
FROM orders
WHERE placed - placed % 3600000 = <hour>;

-- name: topCustomersOfHour
-- periodic: 1 min
SELECT customer, SUM(total) AS spend
FROM orders
WHERE placed - placed % 3600000 = <hour>
GROUP BY customer
ORDER BY SUM(total) DESC
LIMIT 2;

-- name: statusPerHour
-- periodic: 1 min
-- A time window with an equality parameter besides the epoch.
SELECT COUNT(*) AS orders
FROM orders
WHERE placed - placed % 3600000 = <hour> AND status = <status>;

-- name: hotProducts
-- periodic: 1 min
-- Issue 12, item 2: a time window over a join (orders windowed, lines joined).
SELECT l.sku, SUM(l.qty) AS units
FROM orders o, order_lines l
WHERE l.order_id = o.id AND o.placed - o.placed % 3600000 = <hour>
GROUP BY l.sku
ORDER BY SUM(l.qty) DESC
LIMIT 3;

-- name: newestSpenders
-- periodic: 1 min
SELECT customer, COUNT(*) AS orders, SUM(total) AS spend
FROM (SELECT customer, total, placed FROM orders ORDER BY placed DESC LIMIT 5) recent
GROUP BY customer;

-- name: openOrdersOf
-- Literal predicates become guards of the view's rules (total may be NULL or negative).
SELECT COUNT(*) AS orders, SUM(total) AS revenue
FROM orders WHERE customer = <customer> AND status = 'a' AND total >= 0;

-- name: countedTotals
-- COUNT of a nullable column counts its non-NULL values.
SELECT COUNT(total) AS with_total, COUNT(*) AS orders FROM orders WHERE status = <status>;

-- name: ordersAbove
-- A range parameter after an equality, ordered on the same index.
SELECT id, total FROM orders WHERE customer = <customer> AND total > <least>
ORDER BY total LIMIT 3;

-- name: orderDetail
SELECT * FROM orders WHERE id = <id>;

-- name: linesOfOrderSorted
-- Two ORDER BY columns with ties in the first.
SELECT line, qty FROM order_lines WHERE order_id = <order> ORDER BY qty DESC, line LIMIT 2;

-- name: bigLinesOfSku
-- A literal range in an SI-2 join view.
SELECT l.order_id, l.line, l.amount
FROM order_lines l, orders o
WHERE l.order_id = o.id AND o.customer = <customer> AND l.amount >= 3
ORDER BY l.amount DESC
LIMIT 3;

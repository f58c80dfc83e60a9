-- examples/tpcw/queries.sql: every database read of TPC-W's 14 web interactions.
--
-- Names start with the interaction that runs them (the benchmark driver maps
-- them by prefix, see piql/bench/tpcw_mix.py); "promo_" is the promotional
-- banner several pages show. The SQL is the TPC-W reference implementation's
-- (TPCW_Database.java), changed only where the paper (§8.2) changes it:
--   - title search reads item_title_word instead of LIKE '%word%', and author
--     search compares the last name instead of its SOUNDEX;
--   - BestSellers and AdminConfirm count the orders of the current hour
--     instead of the last 3,333 / 10,000 orders (SI-3, periodic views);
--   - the five related items are five joins instead of an OR of five equalities.
-- Writes (new cart lines, orders, customers, stock, item updates) go through
-- piql's maintained writes; they are not queries.

-- name: home_customer_name
-- Home: greet the customer.
SELECT c_fname, c_lname
FROM customer
WHERE c_id = <c_id>;

-- name: promo_related_items
-- Home, NewProducts, BestSellers, SearchRequest, SearchResult, ShoppingCart:
-- thumbnails of the five items related to one item.
SELECT r1.i_id, r1.i_thumbnail, r2.i_id, r2.i_thumbnail, r3.i_id, r3.i_thumbnail,
       r4.i_id, r4.i_thumbnail, r5.i_id, r5.i_thumbnail
FROM item i, item r1, item r2, item r3, item r4, item r5
WHERE i.i_id = <i_id>
  AND r1.i_id = i.i_related1 AND r2.i_id = i.i_related2 AND r3.i_id = i.i_related3
  AND r4.i_id = i.i_related4 AND r5.i_id = i.i_related5;

-- name: new_products
-- NewProducts: the 50 newest books of a subject (TPC-W breaks ties by title
-- ascending; one index scan reads a single direction, so ties go by title descending).
SELECT i.i_id, i.i_title, a.a_fname, a.a_lname, i.i_pub_date
FROM item i, author a
WHERE i.i_subject = <subject> AND a.a_id = i.i_a_id
ORDER BY i.i_pub_date DESC, i.i_title DESC
LIMIT 50;

-- name: best_sellers
-- periodic: 1 min
-- BestSellers: the 50 books of a subject sold most this hour (o_date in ms).
SELECT ol.ol_i_id, SUM(ol.ol_qty) AS sold
FROM orders o, order_line ol, item i
WHERE ol.ol_o_id = o.o_id AND i.i_id = ol.ol_i_id AND i.i_subject = <subject>
  AND o.o_date - o.o_date % 3600000 = <hour>
GROUP BY ol.ol_i_id
ORDER BY SUM(ol.ol_qty) DESC
LIMIT 50;

-- name: best_sellers_titles
-- BestSellers: title and author of a best seller.
SELECT i.i_title, a.a_fname, a.a_lname
FROM item i, author a
WHERE i.i_id = <i_id> AND a.a_id = i.i_a_id;

-- name: product_detail
-- ProductDetail: one book with its author.
SELECT i.i_id, i.i_title, i.i_pub_date, i.i_publisher, i.i_subject, i.i_desc,
       i.i_image, i.i_srp, i.i_cost, i.i_avail, i.i_isbn, i.i_page, i.i_backing,
       i.i_dimensions, a.a_fname, a.a_lname
FROM item i, author a
WHERE i.i_id = <i_id> AND a.a_id = i.i_a_id;

-- name: search_by_author
-- SearchResult: books by authors of a last name, by title, 50 per page.
SELECT i.i_id, i.i_title, a.a_fname, a.a_lname
FROM author a, item i
WHERE a.a_lname = <lname> AND i.i_a_id = a.a_id
ORDER BY i.i_title
LIMIT 50;

-- name: search_by_title
-- SearchResult: books whose title has a word, by title, 50 per page.
SELECT i.i_id, i.i_title, a.a_fname, a.a_lname
FROM item_title_word w, item i, author a
WHERE w.itw_word = <word> AND i.i_id = w.itw_i_id AND a.a_id = i.i_a_id
ORDER BY i.i_title
LIMIT 50;

-- name: search_by_subject
-- SearchResult: books of a subject, by title, 50 per page.
SELECT i.i_id, i.i_title, a.a_fname, a.a_lname
FROM item i, author a
WHERE i.i_subject = <subject> AND a.a_id = i.i_a_id
ORDER BY i.i_title
LIMIT 50;

-- name: cart_lines
-- ShoppingCart, BuyRequest, BuyConfirm: the lines of a cart with their books.
SELECT l.scl_i_id, l.scl_qty, i.i_title, i.i_cost, i.i_srp, i.i_backing
FROM shopping_cart_line l, item i
WHERE l.scl_sc_id = <sc_id> AND i.i_id = l.scl_i_id;

-- name: customer_registration_uname
-- CustomerRegistration: a returning customer's account by user name.
SELECT c_id, c_passwd, c_fname, c_lname
FROM customer
WHERE c_uname = <uname>;

-- name: customer_registration_country
-- CustomerRegistration: a country's id by name, for the new address.
SELECT co_id
FROM country
WHERE co_name = <co_name>;

-- name: buy_request_customer
-- BuyRequest: the customer with address and country.
SELECT c.c_id, c.c_fname, c.c_lname, c.c_discount, c.c_phone, c.c_email,
       a.addr_street1, a.addr_street2, a.addr_city, a.addr_state, a.addr_zip, co.co_name
FROM customer c, address a, country co
WHERE c.c_uname = <uname> AND a.addr_id = c.c_addr_id AND co.co_id = a.addr_co_id;

-- name: buy_confirm_customer
-- BuyConfirm: the customer's discount and address.
SELECT c_discount, c_addr_id
FROM customer
WHERE c_id = <c_id>;

-- name: buy_confirm_stock
-- BuyConfirm: stock of a book being bought.
SELECT i_stock
FROM item
WHERE i_id = <i_id>;

-- name: order_inquiry_customer
-- OrderInquiry: the customer asking, by user name.
SELECT c_id, c_uname
FROM customer
WHERE c_uname = <uname>;

-- name: order_display_password
-- OrderDisplay: check the password.
SELECT c_passwd
FROM customer
WHERE c_uname = <uname>;

-- name: order_display_last_order
-- OrderDisplay: the customer's most recent order.
SELECT o.o_id, o.o_date
FROM customer c, orders o
WHERE c.c_uname = <uname> AND o.o_c_id = c.c_id
ORDER BY o.o_date DESC
LIMIT 1;

-- name: order_display_order
-- OrderDisplay: the order, its payment and addresses.
SELECT o.o_id, o.o_date, o.o_sub_total, o.o_tax, o.o_total, o.o_ship_type,
       o.o_ship_date, o.o_status, x.cx_type, c.c_fname, c.c_lname, c.c_email,
       b.addr_street1, b.addr_city, b.addr_zip, s.addr_street1, s.addr_city, s.addr_zip
FROM orders o, cc_xacts x, customer c, address b, address s
WHERE o.o_id = <o_id> AND x.cx_o_id = o.o_id AND c.c_id = o.o_c_id
  AND b.addr_id = o.o_bill_addr_id AND s.addr_id = o.o_ship_addr_id;

-- name: order_display_lines
-- OrderDisplay: the lines of the order with their books.
SELECT l.ol_i_id, i.i_title, i.i_publisher, i.i_cost, l.ol_qty, l.ol_discount, l.ol_comments
FROM order_line l, item i
WHERE l.ol_o_id = <o_id> AND i.i_id = l.ol_i_id;

-- name: admin_request_item
-- AdminRequest: the book to edit, with its author.
SELECT i.i_id, i.i_title, i.i_srp, i.i_cost, i.i_image, i.i_thumbnail, a.a_fname, a.a_lname
FROM item i, author a
WHERE i.i_id = <i_id> AND a.a_id = i.i_a_id;

-- name: admin_confirm_related
-- periodic: 1 min
-- AdminConfirm: the 5 books bought most often together with a book this hour.
SELECT l2.ol_i_id AS also_bought, SUM(l2.ol_qty) AS qty
FROM orders o, order_line l1, order_line l2
WHERE l1.ol_o_id = o.o_id AND l2.ol_o_id = o.o_id AND l1.ol_i_id = <i_id>
  AND o.o_date - o.o_date % 3600000 = <hour>
GROUP BY l2.ol_i_id
ORDER BY SUM(l2.ol_qty) DESC
LIMIT 5;

-- name: admin_confirm_item
-- AdminConfirm: the book after the update.
SELECT i_id, i_title, i_cost, i_image, i_thumbnail, i_pub_date, i_related1, i_related2,
       i_related3, i_related4, i_related5
FROM item
WHERE i_id = <i_id>;

-- The constructs of issue 14 ("the SQL people already write"), each bounded.

-- name: residualFilters
-- Residual predicates on a bounded access: <>, LIKE, NOT LIKE (filters, bound unchanged).
SELECT id, score FROM posts
WHERE author = <a> AND score <> 2 AND (title LIKE 'c%' OR title NOT LIKE '%z%');

-- name: arithmeticFilter
SELECT id FROM posts WHERE author = <a> AND (score * 2 + 1 > 3 OR topic IS NOT NULL);

-- name: functionFilter
SELECT id, title FROM posts WHERE author = <a> AND LOWER(title) IN ('z z', 'a', 'c');

-- name: expressions
SELECT id, score * 2 + 1 AS s, score / 3 AS q, score % 3 AS m, -score AS n,
       COALESCE(topic, title, 'none') AS t,
       CASE WHEN score > 2 THEN 'hi' WHEN score IS NULL THEN 'none' ELSE 'lo' END AS band,
       CASE topic WHEN 'a' THEN 1 WHEN 'b' THEN 2 END AS code,
       LOWER(title) AS lt, UPPER(title) AS ut, LENGTH(title) AS len,
       CAST(score AS REAL) AS r, CAST(title AS INTEGER) AS ti, title || '!' AS bang,
       NULLIF(score, 0) AS nz
FROM posts WHERE author = <a>;

-- name: commentText
SELECT id, CAST(weight AS TEXT) AS w, weight * 2 AS w2, body || author AS tagged
FROM comments WHERE post = <p> AND id = <i>;

-- name: distinctTopics
SELECT DISTINCT topic FROM posts WHERE author = <a>;

-- name: distinctJoined
SELECT DISTINCT p.topic, u.team
FROM posts p JOIN users u ON u.id = p.author
WHERE p.author = <a>;

-- name: busyTopics
SELECT topic, COUNT(*) AS n, MAX(score) AS best
FROM posts WHERE author = <a>
GROUP BY topic HAVING COUNT(*) > 1 OR MAX(score) > 2;

-- name: noTopic
-- IS NULL as a residual filter after the bounded read by author.
SELECT id FROM posts WHERE author = <a> AND topic IS NULL;

-- name: userWithoutEmail
-- IS NULL on a unique key that treats NULLs as equal: one row at most (SI-1).
SELECT id, name FROM users WHERE email IS NULL;

-- name: postsIn
-- IN list on the primary key: 3 lookups.
SELECT id, title FROM posts WHERE id IN (<a>, <b>, <c>);

-- name: postsOfTwo
-- OR of key equalities on one column: 2 index probes of at most 4 rows.
SELECT id, author FROM posts WHERE author = <a> OR author = <b>;

-- name: newestComments
-- An IN list with ORDER BY ... LIMIT: each probe stops after 3, then a merge keeps 3.
SELECT post, id, body FROM comments WHERE post IN (<p>, <q>) ORDER BY id DESC LIMIT 3;

-- name: secondPage
SELECT id, score FROM posts WHERE author = <a> ORDER BY score DESC LIMIT 2 OFFSET 1;

-- name: commentsPage
-- max: n 3
SELECT id, body FROM comments WHERE post = <p> ORDER BY id LIMIT <n>;

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

-- name: postWithAuthor
-- LEFT JOIN by key: a post without an author (NULL) keeps its row, NULL-extended.
SELECT p.id, p.title, u.name, u.team
FROM posts p LEFT JOIN users u ON u.id = p.author
WHERE p.id = <a>;

-- name: userAndGoodPosts
-- LEFT JOIN with a condition in ON (it decides what matches, not which users stay).
SELECT u.id, p.id AS post, p.score
FROM users u LEFT JOIN posts p ON p.author = u.id AND p.score > 1
WHERE u.id = <u>;

-- name: usersWithoutPosts
-- The anti-join spelled with LEFT JOIN ... IS NULL (a filter after the extension).
SELECT u.id FROM users u LEFT JOIN posts p ON p.author = u.id
WHERE u.id IN (<a>, <b>) AND p.id IS NULL;

-- name: commentedPosts
-- EXISTS: a semi-join that stops after the first comment of each post (any number exist).
SELECT id, title FROM posts p
WHERE author = <a> AND EXISTS (SELECT 1 FROM comments c WHERE c.post = p.id);

-- name: postsWithoutLateComments
-- NOT EXISTS with a range on the key: an anti-join that also stops after one row.
SELECT id FROM posts p
WHERE author = <a> AND NOT EXISTS (SELECT * FROM comments WHERE post = p.id AND id > 2);

-- name: postsByTeam
-- IN (SELECT ...): a semi-join by the users key, checked on the one row it finds.
SELECT id, title FROM posts
WHERE id IN (<a>, <b>) AND author IN (SELECT id FROM users WHERE team = 'a');

-- name: postOrAuthored
-- UNION: a key lookup and an index read, duplicates removed (bound 1 + 8).
SELECT id, title FROM posts WHERE id = <a>
UNION
SELECT id, title FROM posts WHERE author = <b>;

-- name: titlesAndName
-- UNION ALL over two tables keeps every row.
SELECT title FROM posts WHERE author = <a>
UNION ALL
SELECT name FROM users WHERE id = <a>;

-- name: unionPage
-- ORDER BY ... LIMIT ... OFFSET of a whole UNION, by an output column.
SELECT id, title AS label FROM posts WHERE id IN (<a>, <b>)
UNION
SELECT id, name FROM users WHERE id = <c>
ORDER BY label DESC LIMIT 2 OFFSET 1;

-- name: titlesFrom
-- LIKE 'prefix%' as an index range (title >= 'c' AND title < 'd'), stopped by LIMIT;
-- case-sensitive, as in PostgreSQL: 'Cab' is not among them.
SELECT id, title FROM posts WHERE title LIKE 'c%' ORDER BY title LIMIT 3;

-- name: authorTitles
-- A range on the column after a bound prefix (author, title), within author's bound.
SELECT id, title FROM posts WHERE author = <a> AND title LIKE 'C%';

-- name: commentBodies
SELECT id, body FROM comments WHERE post = <p> AND body LIKE 'y%' ORDER BY body DESC LIMIT 2;

-- name: titlePattern
-- A prefix range that cannot be exact ('_' after the prefix): LIKE stays a filter.
SELECT id FROM posts WHERE author = <a> AND title LIKE 'c_z%';

-- name: teamPosts
-- A row view (SI-2) keyed on team: the IN list reads one key per value, and the
-- projection's expressions are computed on the view's rows when the query runs.
SELECT p.id, COALESCE(p.title, u.name) AS label, p.score % 5 + 1 AS s
FROM posts p JOIN users u ON u.id = p.author
WHERE u.team IN (<t>, <v>) ORDER BY p.id LIMIT 3;

-- name: teamStats
-- An aggregate view grouped by the IN list's column (one view row per value), with CASE
-- and COALESCE over the aggregates it keeps.
SELECT u.team, COUNT(*) AS n, COUNT(p.title) AS titled,
       CASE WHEN COUNT(p.score) > 1 THEN 'many' ELSE 'few' END AS band,
       COALESCE(SUM(p.id), 0) * 2 AS ids
FROM posts p JOIN users u ON u.id = p.author
WHERE u.team IN (<t>, <v>) GROUP BY u.team;

-- name: commentWeight
-- A global aggregate of one view row: COALESCE answers 0 for a post without comments.
SELECT COALESCE(SUM(weight), 0) AS w, COUNT(*) - COUNT(weight) AS unweighted
FROM comments WHERE post = <p>;

-- name: userByEmail
-- The declared unique expression index on lower(email): one user (SI-1).
SELECT id, name FROM users WHERE LOWER(email) = LOWER(<e>);

-- name: commentsByBody
-- A new expression index (UPPER(body), post, id), read in order and stopped by LIMIT.
SELECT post, id FROM comments WHERE UPPER(body) = <w> ORDER BY post, id LIMIT 2;

-- name: busyTeams
-- HAVING over an aggregate view: a filter on its rows (one per team).
SELECT u.team, COUNT(*) AS n FROM posts p JOIN users u ON u.id = p.author
WHERE u.team IN (<t>, <v>) GROUP BY u.team HAVING COUNT(*) > 2;

-- The social oracle app's queries: every level piql supports.

-- name: personById
SELECT id, handle, team, role, joined FROM people WHERE id = <id>;

-- name: teamRoster
-- Issue 12, item 1: bounded by the two CARDINALITY constraints (2 roles x 2 people).
SELECT id, role FROM people WHERE team = <team>;

-- name: following
SELECT p.id, p.handle
FROM follows f JOIN people p ON p.id = f.dst
WHERE f.src = <person>;

-- name: postWithAuthor
SELECT po.id, po.body, po.score, pe.handle
FROM posts po JOIN people pe ON pe.id = po.author
WHERE po.id = <post>;

-- name: postsByAuthor
SELECT id, created, body FROM posts WHERE author = <author> ORDER BY created DESC LIMIT 3;

-- name: bestPostsByAuthor
-- Scores tie often: any valid top 2 is right.
SELECT id, score FROM posts WHERE author = <author> ORDER BY score DESC LIMIT 2;

-- name: postsInRange
SELECT id, created FROM posts
WHERE author = <author> AND created BETWEEN <since> AND <until>
ORDER BY created LIMIT 4;

-- name: feed
-- The home feed: the newest posts of the people I follow (at most 4 of them).
SELECT po.id, po.author, po.created
FROM follows f, posts po
WHERE f.src = <person> AND po.author = f.dst
ORDER BY po.created DESC
LIMIT 5;

-- name: followerCount
SELECT COUNT(*) AS followers FROM follows WHERE dst = <person>;

-- name: likeStats
SELECT COUNT(*) AS likes, SUM(weight) AS total, AVG(weight) AS mean FROM likes WHERE post = <post>;

-- name: likesGiven
SELECT COUNT(*) AS given, SUM(weight) AS total FROM likes WHERE person = <person>;

-- name: postsPerTopic
-- topic is nullable: a NULL topic is a group of its own in SQL.
SELECT COUNT(*) AS posts FROM posts WHERE topic = <topic>;

-- name: likers
-- The 5 most recent likers of a post, with their handles (an SI-2 join view).
SELECT l.person, pe.handle, l.weight
FROM likes l JOIN people pe ON pe.id = l.person
WHERE l.post = <post>
ORDER BY l.at DESC
LIMIT 5;

-- name: teamPosts
-- The newest posts by members of a team (a view over posts joined with people).
SELECT po.id, po.created
FROM posts po, people pe
WHERE po.author = pe.id AND pe.team = <team>
ORDER BY po.created DESC
LIMIT 3;

-- name: likesReceived
-- Likes an author received over all their posts (an aggregate over a join).
SELECT COUNT(*) AS likes, SUM(l.weight) AS total, AVG(l.weight) AS mean
FROM likes l, posts po
WHERE l.post = po.id AND po.author = <author>;

-- name: bestWithTag
-- The best-scored posts with a tag: an SI-2 join view ordered by the joined table's
-- column; scores tie often.
SELECT po.id, po.score
FROM post_tags t, posts po
WHERE t.post = po.id AND t.tag = <tag>
ORDER BY po.score DESC
LIMIT 3;

-- name: twoTags
SELECT po.id, po.created
FROM post_tags t1, post_tags t2, posts po
WHERE t1.post = t2.post AND t1.post = po.id AND t1.tag = <tag1> AND t2.tag = <tag2>
ORDER BY po.created DESC
LIMIT 4;

-- name: tagScore
-- Sum and mean of the scores of the posts with a tag (score is nullable).
SELECT COUNT(*) AS posts, SUM(po.score) AS total, AVG(po.score) AS mean
FROM post_tags t, posts po
WHERE t.post = po.id AND t.tag = <tag>;

-- name: selfFollows
-- Issue 12, item 11: one parameter used twice in an aggregate.
SELECT COUNT(*) AS n FROM follows WHERE src = <p> AND dst = <p>;

-- name: latestPosts
-- periodic: 1 min
SELECT id, author, created FROM posts ORDER BY created DESC LIMIT 5;

-- name: activeAuthors
-- periodic: 1 min
SELECT author, COUNT(*) AS posts
FROM (SELECT author, created FROM posts ORDER BY created DESC LIMIT 6) recent
GROUP BY author;

-- name: trending
-- periodic: 1 min
SELECT post, COUNT(*) AS likes
FROM likes
WHERE at - at % 3600000 = <hour>
GROUP BY post
ORDER BY COUNT(*) DESC
LIMIT 3;

-- name: likesPerHour
-- periodic: 1 min
SELECT COUNT(*) AS likes, SUM(weight) AS total FROM likes WHERE at - at % 3600000 = <hour>;

-- name: hotTags
-- periodic: 1 min
-- Issue 12, item 2: a time window over a join; re-tagging a post must reach the
-- windowed likes of that post.
SELECT t.tag, COUNT(*) AS likes
FROM likes l, post_tags t
WHERE t.post = l.post AND l.at - l.at % 3600000 = <hour>
GROUP BY t.tag
ORDER BY COUNT(*) DESC
LIMIT 3;

-- name: postLikesPerHour
-- An epoch behind a key: SI-2 (the view is keyed by post first).
SELECT COUNT(*) AS likes FROM likes WHERE post = <post> AND at - at % 3600000 = <hour>;

-- name: newestWithAuthor
-- Issue 12, item 13: a tuple window joined by key, flat spelling.
SELECT po.id, pe.handle
FROM posts po JOIN people pe ON pe.id = po.author
ORDER BY po.created DESC
LIMIT 4;

-- name: newestWithAuthorNested
-- Issue 12, item 13: the same, the window as a FROM subquery.
SELECT r.id, pe.handle
FROM (SELECT id, author, created FROM posts ORDER BY created DESC LIMIT 4) r
JOIN people pe ON pe.id = r.author;

-- examples/social/queries.sql: the queries behind the app's screens.
-- Each block is a `-- name:` line, a comment saying what the screen shows,
-- and one SQL statement; <param> is a value the application passes at run time.

-- name: userById
-- Profile header: one user by id.
SELECT userId, name, email, createdAt
FROM users
WHERE userId = <userId>;

-- name: following
-- "Following" tab: everyone a user follows, with names (at most 5000 by the schema).
SELECT u.userId, u.name
FROM follows f JOIN users u ON u.userId = f.followee
WHERE f.follower = <userId>;

-- name: postTags
-- Post page: the tags of one post (at most 10 by the schema).
SELECT tag
FROM post_tags
WHERE postId = <postId>;

-- name: postWithAuthor
-- Post page: the post with its author's name.
SELECT p.postId, p.body, p.createdAt, u.name
FROM posts p JOIN users u ON u.userId = p.author
WHERE p.postId = <postId>;

-- name: userByEmail
-- Login: the account with this email (unique, see the schema).
SELECT userId, name
FROM users
WHERE email = <email>;

-- name: userPosts
-- Profile page: a user's 20 newest posts.
SELECT postId, createdAt, body
FROM posts
WHERE author = <userId>
ORDER BY createdAt DESC
LIMIT 20;

-- name: userPostsBetween
-- Profile archive: a user's posts in a time range, oldest first, 50 per page.
SELECT p.postId, p.createdAt, p.body, u.name
FROM posts p, users u
WHERE p.author = <userId> AND u.userId = p.author
  AND p.createdAt BETWEEN <since> AND <until>
ORDER BY p.createdAt
LIMIT 50;

-- name: followers
-- "Followers" tab: a user's 50 most recent followers, with names.
SELECT f.follower, f.since, u.name
FROM follows f JOIN users u ON u.userId = f.follower
WHERE f.followee = <userId>
ORDER BY f.since DESC
LIMIT 50;

-- name: homeTimeline
-- Home timeline: the 20 newest posts of the users I follow.
SELECT p.postId, p.author, p.createdAt, p.body
FROM follows f, posts p
WHERE f.follower = <userId> AND p.author = f.followee
ORDER BY p.createdAt DESC
LIMIT 20;

-- name: followerCount
-- Profile header: how many followers a user has.
SELECT COUNT(*) AS followers
FROM follows
WHERE followee = <userId>;

-- name: likeCount
-- Post footer: how many likes a post has.
SELECT COUNT(*) AS likes
FROM likes
WHERE postId = <postId>;

-- name: twoTags
-- Explore page: the 10 newest posts carrying both of two tags.
SELECT p.postId, p.createdAt, p.body
FROM post_tags t1, post_tags t2, posts p
WHERE t1.postId = t2.postId AND t1.postId = p.postId
  AND t1.tag = <tag1> AND t2.tag = <tag2>
ORDER BY p.createdAt DESC
LIMIT 10;

-- name: latestPosts
-- Explore page: the 20 newest posts of the whole site.
SELECT postId, author, createdAt, body
FROM posts
ORDER BY createdAt DESC
LIMIT 20;

-- name: activeAuthors
-- periodic: 1 min
-- Explore page: who wrote the 5000 newest posts, with how many each.
SELECT author, COUNT(*) AS posts
FROM (SELECT author, createdAt FROM posts ORDER BY createdAt DESC LIMIT 5000) recent
GROUP BY author;

-- name: trending
-- periodic: 1 min
-- Explore page: the 10 most liked posts of an hour (likedAt in milliseconds).
SELECT postId, COUNT(*) AS likes
FROM likes
WHERE likedAt - likedAt % 3600000 = <hour>
GROUP BY postId
ORDER BY COUNT(*) DESC
LIMIT 10;

-- name: likers
-- Post page: everyone who liked a post (a viral post has millions).
SELECT l.userId, u.name
FROM likes l JOIN users u ON u.userId = l.userId
WHERE l.postId = <postId>;

-- name: searchPosts
-- Search box: posts whose text matches a pattern.
SELECT postId, body
FROM posts
WHERE body LIKE <pattern>
LIMIT 20;

-- name: friendPostCount
-- Home sidebar: how many posts the users I follow have written (a neighbourhood
-- aggregate: one count per author, summed over at most 5000 followees).
SELECT COUNT(*) AS posts
FROM follows f, posts p
WHERE f.follower = <userId> AND p.author = f.followee;

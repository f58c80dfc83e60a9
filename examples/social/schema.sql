-- examples/social/schema.sql: a small social network.
--
-- Users follow other users, write posts, like posts and tag them. Besides
-- standard SQL, the schema states two facts piql needs to bound work:
--   WITH CARDINALITY (col, K) [PER (cols)]  at most K values of col per group
--   TEMPORAL                                values arrive in time order

-- createdAt is TEMPORAL: new users get ever-growing timestamps, so an index
-- led by createdAt would send every insert to the same partition.
-- email is unique: at most one userId per email (the PER form, grouping on a
-- non-key column). With the index below, a login by email reads one index
-- entry and one row.
CREATE TABLE users (
    userId    BIGINT PRIMARY KEY,
    name      VARCHAR,
    email     VARCHAR,
    createdAt BIGINT TEMPORAL
) WITH CARDINALITY (userId, 1) PER (email);

CREATE INDEX users_by_email ON users (email);

-- One row per (follower, followee). The CARDINALITY constraint caps how many
-- users one person may follow: at most 5000 followee values per follower
-- (the default PER is the other primary-key columns, here follower).
-- Nothing caps followers: a celebrity may have millions.
CREATE TABLE follows (
    follower BIGINT,
    followee BIGINT,
    since    BIGINT TEMPORAL,
    PRIMARY KEY (follower, followee),
    FOREIGN KEY (follower) REFERENCES users (userId),
    FOREIGN KEY (followee) REFERENCES users (userId)
) WITH CARDINALITY (followee, 5000);

-- createdAt is TEMPORAL: posts are written in time order.
CREATE TABLE posts (
    postId    BIGINT,
    author    BIGINT NOT NULL,
    createdAt BIGINT TEMPORAL,
    body      VARCHAR,
    PRIMARY KEY (postId),
    FOREIGN KEY (author) REFERENCES users (userId)
);

-- One row per (post, user who liked it). No CARDINALITY: a post may collect
-- any number of likes, and a user may like any number of posts.
CREATE TABLE likes (
    postId  BIGINT,
    userId  BIGINT,
    likedAt BIGINT TEMPORAL,
    PRIMARY KEY (postId, userId),
    FOREIGN KEY (postId) REFERENCES posts (postId),
    FOREIGN KEY (userId) REFERENCES users (userId)
);

-- At most 10 tags per post (per postId, the other primary-key column).
-- A popular tag may be on any number of posts.
CREATE TABLE post_tags (
    postId BIGINT,
    tag    VARCHAR,
    PRIMARY KEY (postId, tag),
    FOREIGN KEY (postId) REFERENCES posts (postId)
) WITH CARDINALITY (tag, 10);

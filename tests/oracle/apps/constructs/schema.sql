-- An oracle app for the everyday SQL constructs of issue 14 (a small blog): residual
-- filters, expressions, DISTINCT, HAVING, IS NULL, IN lists, OFFSET, LIMIT <n>. Every
-- answer is compared with the query's own SQL after random writes (tests/oracle).

-- An email is unique, NULL included (at most one user without one).
CREATE TABLE users (
    id    BIGINT PRIMARY KEY,
    email VARCHAR,
    name  VARCHAR,
    team  VARCHAR,
    UNIQUE NULLS NOT DISTINCT (email)
);

-- An email is unique whatever the case of its ASCII letters (an expression index).
CREATE UNIQUE INDEX users_email_lower ON users (lower(email));

-- At most 4 posts per author.
CREATE TABLE posts (
    id     BIGINT PRIMARY KEY,
    author BIGINT,
    score  BIGINT,
    title  VARCHAR,
    topic  VARCHAR,
    FOREIGN KEY (author) REFERENCES users (id)
) WITH CARDINALITY (id, 4) PER (author);

-- Any number of comments per post.
CREATE TABLE comments (
    post   BIGINT,
    id     BIGINT,
    author BIGINT,
    weight DOUBLE,
    body   VARCHAR,
    PRIMARY KEY (post, id),
    FOREIGN KEY (post) REFERENCES posts (id)
);

-- An oracle app of the social shape: people in teams, who follow each other, write
-- posts and like them. Written for the differential harness (tests/oracle), not
-- an example: it exercises CARDINALITY limits (on key and non-key columns),
-- nullable columns, TEMPORAL columns and foreign keys.

-- At most 2 roles per team and 2 people per (team, role): a team has at most 4
-- members (issue 12, item 1's shape).
CREATE TABLE people (
    id     BIGINT PRIMARY KEY,
    handle VARCHAR,
    team   VARCHAR,
    role   VARCHAR,
    joined BIGINT TEMPORAL
) WITH CARDINALITY (role, 2) PER (team), CARDINALITY (id, 2) PER (team, role);

-- Everyone follows at most 4 people (per src, the other key column).
CREATE TABLE follows (
    src   BIGINT,
    dst   BIGINT,
    since BIGINT TEMPORAL,
    PRIMARY KEY (src, dst),
    FOREIGN KEY (src) REFERENCES people (id),
    FOREIGN KEY (dst) REFERENCES people (id)
) WITH CARDINALITY (dst, 4);

CREATE TABLE posts (
    id      BIGINT PRIMARY KEY,
    author  BIGINT,
    created BIGINT TEMPORAL,
    score   BIGINT,
    topic   VARCHAR,
    body    VARCHAR,
    FOREIGN KEY (author) REFERENCES people (id)
);

-- A like carries a weight (a reaction strength, possibly negative).
CREATE TABLE likes (
    post   BIGINT,
    person BIGINT,
    at     BIGINT TEMPORAL,
    weight BIGINT,
    PRIMARY KEY (post, person),
    FOREIGN KEY (post) REFERENCES posts (id),
    FOREIGN KEY (person) REFERENCES people (id)
);

-- At most 3 tags per post.
CREATE TABLE post_tags (
    post BIGINT,
    tag  VARCHAR,
    PRIMARY KEY (post, tag),
    FOREIGN KEY (post) REFERENCES posts (id)
) WITH CARDINALITY (tag, 3);

-- A bookmarks app: people save links and tag them.

CREATE TABLE users (
    userId BIGINT PRIMARY KEY,
    name   VARCHAR
);

-- One row per saved link. savedAt is the time it was saved, in milliseconds:
-- it only grows, so it is TEMPORAL. A user keeps at most 1000 bookmarks
-- (at most 1000 url values per userId, the other primary-key column).
CREATE TABLE bookmarks (
    userId  BIGINT,
    url     VARCHAR,
    title   VARCHAR,
    savedAt BIGINT TEMPORAL,
    PRIMARY KEY (userId, url),
    FOREIGN KEY (userId) REFERENCES users (userId)
) WITH CARDINALITY (url, 1000);

-- At most 5 tags per bookmark.
CREATE TABLE bookmark_tags (
    userId BIGINT,
    url    VARCHAR,
    tag    VARCHAR,
    PRIMARY KEY (userId, url, tag),
    FOREIGN KEY (userId, url) REFERENCES bookmarks (userId, url)
) WITH CARDINALITY (tag, 5) PER (userId, url);

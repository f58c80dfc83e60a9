-- An oracle app of the messaging shape: channels, their members, messages that
-- may reply to another message (a self-referencing foreign key) and reactions.
-- Written for the differential harness (tests/oracle). name, topic, role, mentioned,
-- reply_to and body are nullable.

-- Channel names are unique (NULL names are not: SQL keeps NULLs distinct).
CREATE TABLE channels (
    id    BIGINT PRIMARY KEY,
    name  VARCHAR UNIQUE,
    topic VARCHAR
);

-- A channel has at most 5 members here (per channel_id, the other key column).
CREATE TABLE members (
    channel_id BIGINT,
    user_id    BIGINT,
    role       VARCHAR,
    joined     BIGINT TEMPORAL,
    PRIMARY KEY (channel_id, user_id),
    FOREIGN KEY (channel_id) REFERENCES channels (id)
) WITH CARDINALITY (user_id, 5);

CREATE TABLE messages (
    id         BIGINT PRIMARY KEY,
    channel_id BIGINT,
    author     BIGINT,
    mentioned  BIGINT,
    reply_to   BIGINT,
    sent       BIGINT TEMPORAL,
    body       VARCHAR,
    edits      INT,
    FOREIGN KEY (channel_id) REFERENCES channels (id),
    FOREIGN KEY (reply_to) REFERENCES messages (id)
);

-- At most 6 distinct emoji per message (issue 12, item 12's shape).
CREATE TABLE reactions (
    message_id BIGINT,
    user_id    BIGINT,
    emoji      VARCHAR,
    at         BIGINT TEMPORAL,
    PRIMARY KEY (message_id, user_id, emoji),
    FOREIGN KEY (message_id) REFERENCES messages (id)
) WITH CARDINALITY (emoji, 6) PER (message_id);

-- The messaging oracle app's queries: every level piql supports.

-- name: messageById
SELECT id, channel_id, author, reply_to, sent, body FROM messages WHERE id = <id>;

-- name: channelByName
-- A lookup through a UNIQUE key: at most one row.
SELECT id, topic FROM channels WHERE name = <name>;

-- name: channelMembers
SELECT user_id, role FROM members WHERE channel_id = <channel>;

-- name: messageWithChannel
SELECT m.id, m.body, c.name, c.topic
FROM messages m JOIN channels c ON c.id = m.channel_id
WHERE m.id = <message>;

-- name: replyWithParent
-- A reply and the message it answers (the self-referencing key).
SELECT r.id, r.body, p.id AS parent, p.author
FROM messages r JOIN messages p ON p.id = r.reply_to
WHERE r.id = <message>;

-- name: emojiCounts
-- Issue 12, item 12: GROUP BY bounded by CARDINALITY (emoji, 6) PER (message_id).
SELECT emoji, COUNT(*) AS n FROM reactions WHERE message_id = <message> GROUP BY emoji;

-- name: channelHistory
SELECT id, author, sent FROM messages WHERE channel_id = <channel> ORDER BY sent DESC LIMIT 4;

-- name: repliesTo
-- reply_to is nullable; replies tie on sent.
SELECT id, author, sent FROM messages WHERE reply_to = <message> ORDER BY sent LIMIT 3;

-- name: mostEdited
SELECT id, edits FROM messages WHERE channel_id = <channel> ORDER BY edits DESC LIMIT 2;

-- name: replyCount
-- Issue 12, item 3: a nullable foreign key grouped by an SI-2 COUNT.
SELECT COUNT(*) AS replies FROM messages WHERE reply_to = <message>;

-- name: mentionsOf
SELECT COUNT(*) AS mentions, SUM(edits) AS edits, AVG(edits) AS mean_edits
FROM messages WHERE mentioned = <user>;

-- name: selfMentions
-- Issue 12, item 11: the same parameter twice in an aggregate.
SELECT COUNT(*) AS n FROM messages WHERE author = <u> AND mentioned = <u>;

-- name: mentionsBetween
-- Issue 12, item 11's bounded twin: two parameters.
SELECT COUNT(*) AS n FROM messages WHERE author = <u> AND mentioned = <v>;

-- name: reactionsByUser
SELECT COUNT(*) AS n FROM reactions WHERE user_id = <user>;

-- name: channelReactions
-- An aggregate over a join: every reaction to the messages of a channel.
SELECT COUNT(*) AS n
FROM messages m, reactions r
WHERE r.message_id = m.id AND m.channel_id = <channel>;

-- name: newMembersByTopic
-- An SI-2 join view: members of the channels with a topic (topic is nullable).
SELECT mb.user_id, c.name, mb.joined
FROM members mb, channels c
WHERE mb.channel_id = c.id AND c.topic = <topic>
ORDER BY mb.joined DESC
LIMIT 4;

-- name: latestMessages
-- periodic: 1 min
SELECT id, channel_id, sent FROM messages ORDER BY sent DESC LIMIT 4;

-- name: busyAuthors
-- periodic: 1 min
SELECT author, COUNT(*) AS messages, SUM(edits) AS edits
FROM (SELECT author, edits, sent FROM messages ORDER BY sent DESC LIMIT 5) recent
GROUP BY author;

-- name: topEmojiOfHour
-- periodic: 1 min
SELECT emoji, COUNT(*) AS n
FROM reactions
WHERE at - at % 3600000 = <hour>
GROUP BY emoji
ORDER BY COUNT(*) DESC
LIMIT 3;

-- name: channelHour
-- periodic: 1 min
SELECT COUNT(*) AS messages, AVG(edits) AS mean_edits
FROM messages
WHERE sent - sent % 3600000 = <hour> AND channel_id = <channel>;

-- name: topicsOfHour
-- periodic: 1 min
-- Issue 12, item 2: a time window on messages joined with their channel; a new
-- topic for a channel must reach the windowed messages.
SELECT c.topic, COUNT(*) AS n
FROM messages m, channels c
WHERE c.id = m.channel_id AND m.sent - m.sent % 3600000 = <hour>
GROUP BY c.topic
ORDER BY COUNT(*) DESC
LIMIT 3;

-- name: newestWithChannel
-- Issue 12, item 13: a tuple window joined by key (flat).
SELECT m.id, c.name
FROM messages m JOIN channels c ON c.id = m.channel_id
ORDER BY m.sent DESC
LIMIT 3;

-- name: newestWithChannelNested
-- Issue 12, item 13: the same, nested.
SELECT w.id, c.name
FROM (SELECT id, channel_id, sent FROM messages ORDER BY sent DESC LIMIT 3) w
JOIN channels c ON c.id = w.channel_id;

-- name: newestLabelled
-- A tuple window (SI-3) and, over its rows, constructs beyond the paper's fragment: a
-- LEFT JOIN by key, COALESCE, arithmetic and a filter, computed when the query runs.
SELECT w.id, COALESCE(c.name, 'unnamed') AS label, w.edits * 2 AS e2
FROM (SELECT id, channel_id, sent, edits, body FROM messages ORDER BY sent DESC LIMIT 4) w
LEFT JOIN channels c ON c.id = w.channel_id
WHERE w.body IS NOT NULL OR w.edits > 1;

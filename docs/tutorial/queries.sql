-- The queries behind the bookmarks app's pages.

-- name: myBookmarks
-- A user's whole collection.
SELECT url, title, savedAt
FROM bookmarks
WHERE userId = <userId>;

-- name: recentlySaved
-- The user's 10 newest bookmarks.
SELECT url, title, savedAt
FROM bookmarks
WHERE userId = <userId>
ORDER BY savedAt DESC
LIMIT 10;

-- name: taggedWith
-- The user's bookmarks with one tag.
SELECT b.url, b.title
FROM bookmark_tags t JOIN bookmarks b ON b.userId = t.userId AND b.url = t.url
WHERE b.userId = <userId> AND t.tag = <tag>;

-- name: whoSaved
-- The 10 people who saved a link most recently.
SELECT b.userId, u.name, b.savedAt
FROM bookmarks b JOIN users u ON u.userId = b.userId
WHERE b.url = <url>
ORDER BY b.savedAt DESC
LIMIT 10;

-- name: saveCount
-- How many people saved a link.
SELECT COUNT(*) AS saves
FROM bookmarks
WHERE url = <url>;

-- name: newestOnSite
-- periodic: 30 s
-- Front page: the 5 newest bookmarks of the whole site.
SELECT userId, url, title, savedAt
FROM bookmarks
ORDER BY savedAt DESC
LIMIT 5;

-- pgstore schema version 2: part content kept out of line.
--
-- Part content at or above a writer's blob threshold (long texts and tool
-- outputs, images, encrypted reasoning) is stored once per session, keyed
-- by its SHA-256 (64 lower-case hex digits, as the records' references
-- name it), however often the session attaches it; the record lines hold
-- the references (record format 4). A blob belongs to its session and goes
-- when it goes. The content is stored as it is: PostgreSQL compresses
-- large values itself (TOAST), and the server checks a blob's hash
-- (sha256()) without sending its content. size is the content's length,
-- so that sizes and references are checked without reading it.

CREATE TABLE pgstore_blobs (
	session_id text COLLATE "C" NOT NULL REFERENCES pgstore_sessions (id) ON DELETE CASCADE,
	sha256     text COLLATE "C" NOT NULL CHECK (sha256 ~ '^[0-9a-f]{64}$'),
	size       bigint NOT NULL CHECK (size >= 0),
	content    bytea NOT NULL,
	PRIMARY KEY (session_id, sha256)
);

-- pgstore schema: full-text search.
--
-- What the search index holds of each session: the revision it was
-- computed from (a search brings a row whose revision is not the
-- summary's up to date first), how many of its messages it holds and
-- their digest (a chain of SHA-256 over their text, as the file store's
-- index keeps it), the title with the revision it was set at, and the
-- fields searches filter by. It goes with the session.
CREATE TABLE pgstore_search_sessions (
	session_id text COLLATE "C" PRIMARY KEY REFERENCES pgstore_sessions (id) ON DELETE CASCADE,
	rev        bigint  NOT NULL,
	messages   integer NOT NULL,
	digest     bytea   NOT NULL,
	title      text    NOT NULL,
	title_rev  bigint  NOT NULL,
	updated    timestamptz NOT NULL,
	project    text    NOT NULL,
	labels     jsonb   NOT NULL,
	words      bigint  NOT NULL -- words in the session's documents, for ranking
);
CREATE INDEX pgstore_search_sessions_labels ON pgstore_search_sessions USING gin (labels jsonb_path_ops);

-- One row per message (msg from 0) and per title (msg -1): its text and
-- tool text as they are matched and shown, and the revision it appeared
-- at.
CREATE TABLE pgstore_search_docs (
	session_id text COLLATE "C" NOT NULL REFERENCES pgstore_search_sessions (session_id) ON DELETE CASCADE,
	msg        integer NOT NULL,
	role       text    NOT NULL,
	rev        bigint  NOT NULL,
	words      integer NOT NULL,
	body_text  text    NOT NULL,
	body_tool  text    NOT NULL,
	PRIMARY KEY (session_id, msg)
);

-- The words of each document as a tsvector ('simple': no stemming, no
-- stop words): each distinct word once, the title's and the text's
-- weighted A, the tool text's B. A document whose words do not fit one
-- tsvector takes several rows (chunk 0, 1, …).
CREATE TABLE pgstore_search_words (
	session_id text COLLATE "C" NOT NULL,
	msg        integer NOT NULL,
	chunk      integer NOT NULL,
	tsv        tsvector NOT NULL,
	PRIMARY KEY (session_id, msg, chunk),
	FOREIGN KEY (session_id, msg) REFERENCES pgstore_search_docs (session_id, msg) ON DELETE CASCADE
);
CREATE INDEX pgstore_search_words_tsv ON pgstore_search_words USING gin (tsv);

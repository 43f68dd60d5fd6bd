-- pgstore schema version 1.
--
-- One row per session in pgstore_sessions: the session's existence and its
-- lease. Records and summaries belong to it and go when it goes.
-- Session IDs compare bytewise (COLLATE "C"), as Go compares strings, so
-- that id order and keyset cursors agree with package summary.

CREATE TABLE pgstore_sessions (
	id           text COLLATE "C" PRIMARY KEY,
	-- generation is the highest lease generation ever issued for the
	-- session: never below any generation in its records.
	generation   bigint NOT NULL CHECK (generation >= 0),
	-- held: a holder has it until expires_at (past that it is stale);
	-- free: the last holder released it, or nobody ever held it.
	lease_state  text NOT NULL CHECK (lease_state IN ('held', 'free')),
	expires_at   timestamptz,
	nonce        text NOT NULL DEFAULT '',
	host         text NOT NULL DEFAULT '',
	pid          integer NOT NULL DEFAULT 0,
	label        text NOT NULL DEFAULT '',
	acquired_at  timestamptz,
	heartbeat_at timestamptz
);

-- Every revision, its record line verbatim (FORMAT.md, package
-- internal/record) plus the envelope fields as indexed columns. The line
-- is the truth; time here is rounded to microseconds by timestamptz and is
-- for people and range scans only.
CREATE TABLE pgstore_records (
	session_id text COLLATE "C" NOT NULL REFERENCES pgstore_sessions (id) ON DELETE CASCADE,
	rev        bigint NOT NULL CHECK (rev >= 1),
	gen        bigint NOT NULL CHECK (gen >= 0),
	time       timestamptz NOT NULL,
	kind       text NOT NULL,
	schema     integer NOT NULL,
	line       bytea NOT NULL,
	PRIMARY KEY (session_id, rev)
);

-- The latest full record at or below a revision: where materializing a
-- revision starts.
CREATE INDEX pgstore_records_full ON pgstore_records (session_id, rev) WHERE kind = 'full';

-- The projection of each session's latest record (summary.Summary JSON,
-- lease left empty), kept in the transaction of every append. Times are
-- split into seconds and nanoseconds so that ordering and cursors are
-- exact to the nanosecond, as in package summary.
CREATE TABLE pgstore_summaries (
	session_id text COLLATE "C" PRIMARY KEY REFERENCES pgstore_sessions (id) ON DELETE CASCADE,
	revision   bigint NOT NULL,
	generation bigint NOT NULL,
	schema     integer NOT NULL,
	state      text NOT NULL,
	kind       text NOT NULL,
	parent_id  text COLLATE "C" NOT NULL DEFAULT '',
	created_s  bigint NOT NULL,
	created_ns integer NOT NULL,
	updated_s  bigint NOT NULL,
	updated_ns integer NOT NULL,
	log_bytes  bigint NOT NULL,
	doc        bytea NOT NULL
);

CREATE INDEX pgstore_summaries_updated ON pgstore_summaries (updated_s, updated_ns, session_id);
CREATE INDEX pgstore_summaries_created ON pgstore_summaries (created_s, created_ns, session_id);
CREATE INDEX pgstore_summaries_parent ON pgstore_summaries (parent_id, session_id) WHERE parent_id <> '';

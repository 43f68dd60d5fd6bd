-- pgstore schema version 4: each session's record cap.
--
-- max_record_bytes is the largest record cap of any writer that wrote the
-- session (and, for an imported session, at least its largest record):
-- a holder whose own cap is smaller writes under this one, so that it can
-- go on from the records written under it (a full record as large as
-- those). 0: not recorded (a session written before this version); its
-- holders write under their own cap. Readers read every record the table
-- holds, up to sessionstore.MaxReadRecordBytes, whatever their own cap:
-- the database frames each record, so a reader's cap protects nothing.

ALTER TABLE pgstore_sessions ADD COLUMN max_record_bytes bigint NOT NULL DEFAULT 0 CHECK (max_record_bytes >= 0);

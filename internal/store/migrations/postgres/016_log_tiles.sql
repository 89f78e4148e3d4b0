-- The log's entries and stored hashes in tiles of 256, a row per tile (or
-- per piece of the tile at the log's end) instead of a row per entry and
-- per hash (logtiles.go). The rows of log_entries and log_hashes are moved
-- into them and the two tables dropped by the migration's Go step
-- (migrate.go, migrateLogToTiles), in this migration's transaction.

CREATE TABLE log_entry_tiles (
	tile      BIGINT  NOT NULL,
	start     INTEGER NOT NULL,
	first_seq BIGINT  NOT NULL,
	last_seq  BIGINT  NOT NULL,
	seqs      BYTEA   NOT NULL,
	entries   BYTEA   NOT NULL,
	PRIMARY KEY (tile, start)
);
CREATE INDEX log_entry_tiles_by_seq ON log_entry_tiles(last_seq);
CREATE TABLE log_hash_tiles (
	tile   BIGINT  NOT NULL,
	start  INTEGER NOT NULL,
	hashes BYTEA   NOT NULL,
	PRIMARY KEY (tile, start)
);
ALTER TABLE log_entry_tiles ALTER COLUMN entries SET STORAGE EXTERNAL;
ALTER TABLE log_hash_tiles ALTER COLUMN hashes SET STORAGE EXTERNAL;

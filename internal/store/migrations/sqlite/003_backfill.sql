-- Wallet backfill (docs/backfill.md): one sync-status row per (wallet,
-- network), the transfers found, and the balances computed and read from
-- the chain.

CREATE TABLE sync_status (
	wallet        TEXT    NOT NULL,
	network       TEXT    NOT NULL,
	status        TEXT    NOT NULL,
	start_point   INTEGER NOT NULL,
	target        INTEGER NOT NULL DEFAULT 0,
	checkpoint    INTEGER NOT NULL DEFAULT 0,
	cursor        TEXT    NOT NULL DEFAULT '',
	scanned       INTEGER NOT NULL DEFAULT 0,
	total         INTEGER NOT NULL DEFAULT 0,
	attempts      INTEGER NOT NULL DEFAULT 0,
	retry_count   INTEGER NOT NULL DEFAULT 0,
	next_retry_at INTEGER NOT NULL DEFAULT 0,
	last_error    TEXT    NOT NULL DEFAULT '',
	start_seq     INTEGER NOT NULL DEFAULT 1,
	started_seq   INTEGER NOT NULL DEFAULT 0,
	created_at    INTEGER NOT NULL,
	started_at    INTEGER NOT NULL DEFAULT 0,
	finished_at   INTEGER NOT NULL DEFAULT 0,
	updated_at    INTEGER NOT NULL,
	PRIMARY KEY (wallet, network)
);
-- (Re-)added work whose WalletSync has not been started or signalled yet.
CREATE INDEX sync_status_unstarted ON sync_status(wallet) WHERE started_seq < start_seq;

CREATE TABLE transfers (
	seq        INTEGER PRIMARY KEY AUTOINCREMENT,
	network    TEXT    NOT NULL,
	wallet     TEXT    NOT NULL,
	tx         TEXT    NOT NULL,
	kind       TEXT    NOT NULL,
	idx        INTEGER NOT NULL,
	asset      TEXT    NOT NULL,
	sender     TEXT    NOT NULL,
	recipient  TEXT    NOT NULL,
	amount     TEXT    NOT NULL,
	direction  TEXT    NOT NULL,
	class      TEXT    NOT NULL DEFAULT '',
	block      INTEGER NOT NULL,
	block_time INTEGER NOT NULL,
	UNIQUE (network, wallet, tx, kind, idx)
);
CREATE INDEX transfers_by_wallet ON transfers(wallet, network, seq);

CREATE TABLE wallet_balances (
	wallet        TEXT    NOT NULL,
	network       TEXT    NOT NULL,
	asset         TEXT    NOT NULL,
	opening       TEXT    NOT NULL DEFAULT '0',
	opening_known INTEGER NOT NULL DEFAULT 0,
	opening_at    INTEGER NOT NULL DEFAULT 0,
	computed      TEXT    NOT NULL DEFAULT '',
	chain         TEXT    NOT NULL DEFAULT '',
	chain_known   INTEGER NOT NULL DEFAULT 0,
	chain_at      INTEGER NOT NULL DEFAULT 0,
	reconciled    INTEGER,
	detail        TEXT    NOT NULL DEFAULT '',
	updated_at    INTEGER NOT NULL,
	PRIMARY KEY (wallet, network, asset)
);

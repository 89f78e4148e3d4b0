-- Wallet backfill (docs/backfill.md).

CREATE TABLE sync_status (
	wallet        TEXT    NOT NULL,
	network       TEXT    NOT NULL,
	status        TEXT    NOT NULL,
	start_point   BIGINT  NOT NULL,
	target        BIGINT  NOT NULL DEFAULT 0,
	checkpoint    BIGINT  NOT NULL DEFAULT 0,
	cursor        TEXT    NOT NULL DEFAULT '',
	scanned       BIGINT  NOT NULL DEFAULT 0,
	total         BIGINT  NOT NULL DEFAULT 0,
	attempts      INTEGER NOT NULL DEFAULT 0,
	retry_count   INTEGER NOT NULL DEFAULT 0,
	next_retry_at BIGINT  NOT NULL DEFAULT 0,
	last_error    TEXT    NOT NULL DEFAULT '',
	start_seq     BIGINT  NOT NULL DEFAULT 1,
	started_seq   BIGINT  NOT NULL DEFAULT 0,
	created_at    BIGINT  NOT NULL,
	started_at    BIGINT  NOT NULL DEFAULT 0,
	finished_at   BIGINT  NOT NULL DEFAULT 0,
	updated_at    BIGINT  NOT NULL,
	PRIMARY KEY (wallet, network)
);
CREATE INDEX sync_status_unstarted ON sync_status(wallet) WHERE started_seq < start_seq;

CREATE TABLE transfers (
	seq        BIGSERIAL PRIMARY KEY,
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
	block      BIGINT  NOT NULL,
	block_time BIGINT  NOT NULL,
	UNIQUE (network, wallet, tx, kind, idx)
);
CREATE INDEX transfers_by_wallet ON transfers(wallet, network, seq);

CREATE TABLE wallet_balances (
	wallet        TEXT    NOT NULL,
	network       TEXT    NOT NULL,
	asset         TEXT    NOT NULL,
	opening       TEXT    NOT NULL DEFAULT '0',
	opening_known BOOLEAN NOT NULL DEFAULT FALSE,
	opening_at    BIGINT  NOT NULL DEFAULT 0,
	computed      TEXT    NOT NULL DEFAULT '',
	chain         TEXT    NOT NULL DEFAULT '',
	chain_known   BOOLEAN NOT NULL DEFAULT FALSE,
	chain_at      BIGINT  NOT NULL DEFAULT 0,
	reconciled    BOOLEAN,
	detail        TEXT    NOT NULL DEFAULT '',
	updated_at    BIGINT  NOT NULL,
	PRIMARY KEY (wallet, network, asset)
);

package store

// postgresMigrations are migrations (schema.go) spelled for PostgreSQL: the
// same tables, columns, keys and indexes, version for version, so a
// migration added to one list is added to the other under the same number.
// Times are milliseconds since the Unix epoch in BIGINT columns, as in
// SQLite, so both read and write them the same way; flags that SQL compares
// or combines are BOOLEAN.
var postgresMigrations = []string{
	// 1: evidence, its per-chain outbox rows, batches and their transactions.
	`
CREATE TABLE evidence (
	seq             BIGSERIAL PRIMARY KEY,
	id              TEXT    NOT NULL UNIQUE,
	digest          BYTEA   NOT NULL,
	chains          TEXT    NOT NULL,
	priority        INTEGER NOT NULL,
	idempotency_key TEXT    UNIQUE,
	metadata        TEXT,
	status          TEXT    NOT NULL,
	attempts        INTEGER NOT NULL DEFAULT 0,
	last_error      TEXT    NOT NULL DEFAULT '',
	created_at      BIGINT  NOT NULL,
	updated_at      BIGINT  NOT NULL
);
CREATE INDEX evidence_by_status ON evidence(status, seq);

CREATE TABLE batches (
	id         BIGSERIAL PRIMARY KEY,
	chain      TEXT    NOT NULL,
	size       INTEGER NOT NULL,
	priority   INTEGER NOT NULL,
	state      TEXT    NOT NULL,
	root       BYTEA,
	tx_ref     TEXT,
	block      BIGINT,
	block_time BIGINT,
	attempts   INTEGER NOT NULL DEFAULT 0,
	last_error TEXT    NOT NULL DEFAULT '',
	created_at BIGINT  NOT NULL,
	updated_at BIGINT  NOT NULL
);
CREATE INDEX batches_by_state ON batches(state, chain);

-- The outbox: one row per (evidence, chain), written in the intake transaction.
-- batch_id NULL means the row still waits for a dispatcher.
CREATE TABLE outbox (
	evidence_seq BIGINT  NOT NULL REFERENCES evidence(seq),
	chain        TEXT    NOT NULL,
	priority     INTEGER NOT NULL,
	state        TEXT    NOT NULL,
	batch_id     BIGINT  REFERENCES batches(id),
	leaf_index   INTEGER,
	path         BYTEA,
	PRIMARY KEY (evidence_seq, chain)
);
CREATE INDEX outbox_pending ON outbox(chain, priority, evidence_seq) WHERE batch_id IS NULL;
CREATE INDEX outbox_by_batch ON outbox(batch_id, leaf_index);

-- Every transaction an adapter signed for a batch, saved before broadcast.
CREATE TABLE tx_refs (
	batch_id   BIGINT  NOT NULL REFERENCES batches(id),
	seq        INTEGER NOT NULL,
	chain      TEXT    NOT NULL,
	ref        TEXT    NOT NULL,
	raw        BYTEA,
	meta       TEXT,
	created_at BIGINT  NOT NULL,
	PRIMARY KEY (batch_id, seq)
);
`,
	// 2: reward epochs and the built-in ledger's intents.
	`
CREATE TABLE epochs (
	id                   TEXT    PRIMARY KEY,
	run                  INTEGER NOT NULL,
	status               TEXT    NOT NULL,
	reason               TEXT    NOT NULL DEFAULT '',
	request_hash         TEXT    NOT NULL,
	pool                 TEXT    NOT NULL,
	source               TEXT    NOT NULL DEFAULT '',
	usage                BYTEA,
	deadline_at          BIGINT  NOT NULL,
	inputs_hash          TEXT    NOT NULL DEFAULT '',
	inputs_path          TEXT    NOT NULL DEFAULT '',
	accounts             INTEGER NOT NULL DEFAULT 0,
	total_units          TEXT    NOT NULL DEFAULT '',
	total_paid           TEXT    NOT NULL DEFAULT '',
	payouts_hash         TEXT    NOT NULL DEFAULT '',
	payouts_path         TEXT    NOT NULL DEFAULT '',
	run_hash             TEXT    NOT NULL DEFAULT '',
	run_path             TEXT    NOT NULL DEFAULT '',
	commitment           TEXT    NOT NULL DEFAULT '',
	commitment_hash      TEXT    NOT NULL DEFAULT '',
	commitment_path      TEXT    NOT NULL DEFAULT '',
	intents_total        INTEGER NOT NULL DEFAULT 0,
	intents_emitted      INTEGER NOT NULL DEFAULT 0,
	intents_acknowledged INTEGER NOT NULL DEFAULT 0,
	evidence_id          TEXT    NOT NULL DEFAULT '',
	created_at           BIGINT  NOT NULL,
	started_at           BIGINT  NOT NULL DEFAULT 0,
	sealed_at            BIGINT  NOT NULL DEFAULT 0,
	computed_at          BIGINT  NOT NULL DEFAULT 0,
	written_at           BIGINT  NOT NULL DEFAULT 0,
	intents_at           BIGINT  NOT NULL DEFAULT 0,
	anchored_at          BIGINT  NOT NULL DEFAULT 0,
	finished_at          BIGINT  NOT NULL DEFAULT 0,
	updated_at           BIGINT  NOT NULL
);
CREATE INDEX epochs_by_status ON epochs(status, deadline_at);

CREATE TABLE ledger_intents (
	idempotency_key TEXT    PRIMARY KEY,
	id              TEXT    NOT NULL,
	body_hash       BYTEA   NOT NULL,
	epoch           TEXT    NOT NULL,
	account         TEXT    NOT NULL,
	amount          TEXT    NOT NULL,
	replays         INTEGER NOT NULL DEFAULT 0,
	created_at      BIGINT  NOT NULL
);
CREATE INDEX ledger_intents_by_epoch ON ledger_intents(epoch, account);
`,
	// 3: wallet backfill (docs/backfill.md).
	`
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
`,
	// 4: finality waits (docs/anchoring.md).
	`
CREATE TABLE confirm_waits (
	batch_id    BIGINT  PRIMARY KEY REFERENCES batches(id),
	chain       TEXT    NOT NULL,
	ticket      TEXT    NOT NULL,
	task_token  BYTEA,
	workflow_id TEXT    NOT NULL,
	run_id      TEXT    NOT NULL,
	activity_id TEXT    NOT NULL,
	attempt     INTEGER NOT NULL,
	owner       TEXT    NOT NULL,
	lease_until BIGINT  NOT NULL,
	created_at  BIGINT  NOT NULL
);
CREATE INDEX confirm_waits_by_owner ON confirm_waits(owner);
CREATE INDEX confirm_waits_by_lease ON confirm_waits(chain, lease_until);
`,
	// 5: receipts version 2 (salts; network, block hash and finality per batch).
	`
ALTER TABLE evidence ADD COLUMN salt BYTEA;
ALTER TABLE batches ADD COLUMN network TEXT NOT NULL DEFAULT '';
ALTER TABLE batches ADD COLUMN block_hash TEXT NOT NULL DEFAULT '';
ALTER TABLE batches ADD COLUMN finality TEXT NOT NULL DEFAULT '';
`,
	// 6: webhooks (subscriptions and their deliveries).
	`
CREATE TABLE webhook_subscriptions (
	id              TEXT    PRIMARY KEY,
	url             TEXT    NOT NULL,
	events          TEXT    NOT NULL,
	secret          TEXT    NOT NULL,
	disabled_at     BIGINT  NOT NULL DEFAULT 0,
	disabled_reason TEXT    NOT NULL DEFAULT '',
	failing_since   BIGINT  NOT NULL DEFAULT 0,
	deleted_at      BIGINT  NOT NULL DEFAULT 0,
	created_at      BIGINT  NOT NULL,
	updated_at      BIGINT  NOT NULL
);

CREATE TABLE webhook_deliveries (
	seq             BIGSERIAL PRIMARY KEY,
	id              TEXT    NOT NULL UNIQUE,
	subscription_id TEXT    NOT NULL REFERENCES webhook_subscriptions(id),
	type            TEXT    NOT NULL,
	object_id       TEXT    NOT NULL,
	body            TEXT    NOT NULL,
	status          TEXT    NOT NULL,
	attempts        INTEGER NOT NULL DEFAULT 0,
	last_error      TEXT    NOT NULL DEFAULT '',
	last_status     INTEGER NOT NULL DEFAULT 0,
	run             INTEGER NOT NULL DEFAULT 0,
	started_at      BIGINT  NOT NULL DEFAULT 0,
	delivered_at    BIGINT  NOT NULL DEFAULT 0,
	created_at      BIGINT  NOT NULL,
	updated_at      BIGINT  NOT NULL
);
CREATE INDEX webhook_deliveries_unstarted ON webhook_deliveries(started_at, seq);
CREATE INDEX webhook_deliveries_by_subscription ON webhook_deliveries(subscription_id, seq);
`,
	// 7: write each evidence once (see migrations[6]).
	`
DROP INDEX evidence_by_status;
ALTER TABLE evidence DROP COLUMN status, DROP COLUMN attempts, DROP COLUMN last_error;
ALTER TABLE outbox DROP COLUMN state, DROP COLUMN path;
`,
	// 8: retention (see migrations[7]).
	`
ALTER TABLE batches ADD COLUMN leaves BYTEA;

CREATE TABLE archives (
	id         BIGSERIAL PRIMARY KEY,
	file       TEXT    NOT NULL,
	size       INTEGER NOT NULL,
	created_at BIGINT  NOT NULL
);

CREATE TABLE archived_evidence (
	id         TEXT   PRIMARY KEY,
	archive_id BIGINT NOT NULL REFERENCES archives(id)
);
`,
	// 9: intake writes the evidence row alone (see migrations[8]).
	`
CREATE INDEX evidence_by_lane ON evidence(priority, seq);

CREATE TABLE anchor_start (seq BIGINT NOT NULL);
INSERT INTO anchor_start (seq) SELECT COALESCE(MAX(seq), 0) FROM evidence;

CREATE TABLE anchor_cursors (
	chain    TEXT    NOT NULL,
	priority INTEGER NOT NULL,
	seq      BIGINT  NOT NULL,
	PRIMARY KEY (chain, priority)
);
`,
	// 10: webhook secret rotation with overlap (see migrations[9]).
	`
ALTER TABLE webhook_subscriptions ADD COLUMN previous_secret TEXT NOT NULL DEFAULT '';
ALTER TABLE webhook_subscriptions ADD COLUMN previous_secret_until BIGINT NOT NULL DEFAULT 0;
`,
	// 11: balances while a network retries (see migrations[10]).
	`
ALTER TABLE wallet_balances ADD COLUMN stale BOOLEAN NOT NULL DEFAULT FALSE,
	ADD COLUMN computed_at BIGINT NOT NULL DEFAULT 0;
UPDATE wallet_balances SET computed_at = updated_at WHERE computed != '';
UPDATE wallet_balances SET stale = TRUE WHERE computed = '';
`,
	// 12: the evidence log (see migrations[11]).
	`
CREATE TABLE log_entries (
	idx          BIGINT PRIMARY KEY,
	evidence_seq BIGINT NOT NULL UNIQUE,
	entry        BYTEA  NOT NULL
);
CREATE TABLE log_hashes (
	id   BIGINT PRIMARY KEY,
	hash BYTEA  NOT NULL
);
CREATE TABLE log_checkpoints (
	size       BIGINT PRIMARY KEY,
	root       BYTEA  NOT NULL,
	note       TEXT   NOT NULL,
	created_at BIGINT NOT NULL
);
CREATE TABLE log_state (
	id   INTEGER PRIMARY KEY CHECK (id = 1),
	size BIGINT  NOT NULL,
	seq  BIGINT  NOT NULL,
	vkey TEXT    NOT NULL DEFAULT ''
);
INSERT INTO log_state (id, size, seq) VALUES (1, 0, 0);
ALTER TABLE batches ADD COLUMN log_size BIGINT, ADD COLUMN account TEXT NOT NULL DEFAULT '';
`,
}

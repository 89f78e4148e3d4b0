package store

// migrations are applied in order, each once, inside one transaction; the
// applied version is kept in schema_migrations. Never edit a released
// migration: append a new one, here and, under the same number, in its
// PostgreSQL spelling (postgresMigrations).
var migrations = []string{
	// 1: evidence, its per-chain outbox rows, batches and their transactions.
	`
CREATE TABLE evidence (
	seq             INTEGER PRIMARY KEY AUTOINCREMENT,
	id              TEXT    NOT NULL UNIQUE,
	digest          BLOB    NOT NULL,
	chains          TEXT    NOT NULL,
	priority        INTEGER NOT NULL,
	idempotency_key TEXT    UNIQUE,
	metadata        TEXT,
	status          TEXT    NOT NULL,
	attempts        INTEGER NOT NULL DEFAULT 0,
	last_error      TEXT    NOT NULL DEFAULT '',
	created_at      INTEGER NOT NULL,
	updated_at      INTEGER NOT NULL
);
CREATE INDEX evidence_by_status ON evidence(status, seq);

-- The outbox: one row per (evidence, chain), written in the intake transaction.
-- batch_id NULL means the row still waits for the dispatcher.
CREATE TABLE outbox (
	evidence_seq INTEGER NOT NULL REFERENCES evidence(seq),
	chain        TEXT    NOT NULL,
	priority     INTEGER NOT NULL,
	state        TEXT    NOT NULL,
	batch_id     INTEGER REFERENCES batches(id),
	leaf_index   INTEGER,
	path         BLOB,
	PRIMARY KEY (evidence_seq, chain)
);
CREATE INDEX outbox_pending ON outbox(chain, priority, evidence_seq) WHERE batch_id IS NULL;
CREATE INDEX outbox_by_batch ON outbox(batch_id, leaf_index);

CREATE TABLE batches (
	id         INTEGER PRIMARY KEY AUTOINCREMENT,
	chain      TEXT    NOT NULL,
	size       INTEGER NOT NULL,
	priority   INTEGER NOT NULL,
	state      TEXT    NOT NULL,
	root       BLOB,
	tx_ref     TEXT,
	block      INTEGER,
	block_time INTEGER,
	attempts   INTEGER NOT NULL DEFAULT 0,
	last_error TEXT    NOT NULL DEFAULT '',
	created_at INTEGER NOT NULL,
	updated_at INTEGER NOT NULL
);
CREATE INDEX batches_by_state ON batches(state, chain);

-- Every transaction an adapter signed for a batch, saved before broadcast.
CREATE TABLE tx_refs (
	batch_id   INTEGER NOT NULL REFERENCES batches(id),
	seq        INTEGER NOT NULL,
	chain      TEXT    NOT NULL,
	ref        TEXT    NOT NULL,
	raw        BLOB,
	meta       TEXT,
	created_at INTEGER NOT NULL,
	PRIMARY KEY (batch_id, seq)
);
`,
	// 2: reward epochs (one row per epoch: its request, where each step's
	// artifacts are and how far it got) and the built-in ledger's intents.
	`
CREATE TABLE epochs (
	id                   TEXT    PRIMARY KEY,
	run                  INTEGER NOT NULL,
	status               TEXT    NOT NULL,
	reason               TEXT    NOT NULL DEFAULT '',
	request_hash         TEXT    NOT NULL,
	pool                 TEXT    NOT NULL,
	source               TEXT    NOT NULL DEFAULT '',
	usage                BLOB,
	deadline_at          INTEGER NOT NULL,
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
	created_at           INTEGER NOT NULL,
	started_at           INTEGER NOT NULL DEFAULT 0,
	sealed_at            INTEGER NOT NULL DEFAULT 0,
	computed_at          INTEGER NOT NULL DEFAULT 0,
	written_at           INTEGER NOT NULL DEFAULT 0,
	intents_at           INTEGER NOT NULL DEFAULT 0,
	anchored_at          INTEGER NOT NULL DEFAULT 0,
	finished_at          INTEGER NOT NULL DEFAULT 0,
	updated_at           INTEGER NOT NULL
);
CREATE INDEX epochs_by_status ON epochs(status, deadline_at);

-- The built-in ledger: one row per idempotency key, with a hash of the body
-- it was first used with.
CREATE TABLE ledger_intents (
	idempotency_key TEXT    PRIMARY KEY,
	id              TEXT    NOT NULL,
	body_hash       BLOB    NOT NULL,
	epoch           TEXT    NOT NULL,
	account         TEXT    NOT NULL,
	amount          TEXT    NOT NULL,
	replays         INTEGER NOT NULL DEFAULT 0,
	created_at      INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX ledger_intents_by_epoch ON ledger_intents(epoch, account);
`,
	// 3: wallet backfill (docs/backfill.md): one sync-status row per (wallet,
	// network), the transfers found, and the balances computed and read from
	// the chain.
	`
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
`,
	// 4: finality waits (docs/anchoring.md, "Waiting for finality"): one row
	// per batch whose ConfirmAnchor attempt a worker's finality watcher will
	// complete. ticket names the registration (a retried attempt replaces
	// the row); task_token is NULL for an attempt found orphaned after a
	// crash, which is completed by workflow, run and activity id instead.
	// owner is the watching worker process; another adopts the row once
	// lease_until has passed.
	`
CREATE TABLE confirm_waits (
	batch_id    INTEGER PRIMARY KEY REFERENCES batches(id),
	chain       TEXT    NOT NULL,
	ticket      TEXT    NOT NULL,
	task_token  BLOB,
	workflow_id TEXT    NOT NULL,
	run_id      TEXT    NOT NULL,
	activity_id TEXT    NOT NULL,
	attempt     INTEGER NOT NULL,
	owner       TEXT    NOT NULL,
	lease_until INTEGER NOT NULL,
	created_at  INTEGER NOT NULL
);
CREATE INDEX confirm_waits_by_owner ON confirm_waits(owner);
CREATE INDEX confirm_waits_by_lease ON confirm_waits(chain, lease_until);
`,
	// 5: receipts version 2 (README, "Receipt format"): a random salt per
	// evidence, hashed into its leaf so an audit path reveals no other
	// evidence's digest (NULL for evidence taken in before: their leaves
	// stay the bare digests and their receipts version 1); per batch the
	// network the anchor is on (CAIP-2), its block's hash and the finality
	// rule it was confirmed by.
	`
ALTER TABLE evidence ADD COLUMN salt BLOB;
ALTER TABLE batches ADD COLUMN network TEXT NOT NULL DEFAULT '';
ALTER TABLE batches ADD COLUMN block_hash TEXT NOT NULL DEFAULT '';
ALTER TABLE batches ADD COLUMN finality TEXT NOT NULL DEFAULT '';
`,
	// 6: webhooks (README, "Webhooks"): subscriptions, and one delivery row
	// per (event, subscription) written in the transaction of the state
	// change it reports. events is a comma-list with a comma at each end
	// (",evidence.confirmed,epoch.failed,") so one LIKE matches a type.
	// disabled_at 0 means enabled; failing_since 0 means the last delivery
	// succeeded. A delivery's started_at 0 means no workflow delivers it yet.
	`
CREATE TABLE webhook_subscriptions (
	id              TEXT    PRIMARY KEY,
	url             TEXT    NOT NULL,
	events          TEXT    NOT NULL,
	secret          TEXT    NOT NULL,
	disabled_at     INTEGER NOT NULL DEFAULT 0,
	disabled_reason TEXT    NOT NULL DEFAULT '',
	failing_since   INTEGER NOT NULL DEFAULT 0,
	deleted_at      INTEGER NOT NULL DEFAULT 0,
	created_at      INTEGER NOT NULL,
	updated_at      INTEGER NOT NULL
);

CREATE TABLE webhook_deliveries (
	seq             INTEGER PRIMARY KEY AUTOINCREMENT,
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
	started_at      INTEGER NOT NULL DEFAULT 0,
	delivered_at    INTEGER NOT NULL DEFAULT 0,
	created_at      INTEGER NOT NULL,
	updated_at      INTEGER NOT NULL
);
CREATE INDEX webhook_deliveries_unstarted ON webhook_deliveries(started_at, seq);
CREATE INDEX webhook_deliveries_by_subscription ON webhook_deliveries(subscription_id, seq);
`,
	// 7: write each evidence once (README, "Storage"): an evidence's status,
	// attempts and last error are derived on read from its batches instead of
	// being rewritten at every stage, so those columns and the per-anchor
	// state go; audit paths are computed from the batch's leaves when a
	// receipt is read instead of written one UPDATE per evidence. Both
	// tables are rebuilt (SQLite rewrites a table to drop a column anyway):
	// the outbox as a WITHOUT ROWID table keyed by (evidence, chain), one
	// b-tree instead of a table and its primary-key index, and the indexes
	// on idempotency keys and batch membership partial.
	`
CREATE TABLE evidence_v7 (
	seq             INTEGER PRIMARY KEY AUTOINCREMENT,
	id              TEXT    NOT NULL UNIQUE,
	digest          BLOB    NOT NULL,
	chains          TEXT    NOT NULL,
	priority        INTEGER NOT NULL,
	idempotency_key TEXT,
	metadata        TEXT,
	created_at      INTEGER NOT NULL,
	updated_at      INTEGER NOT NULL,
	salt            BLOB
);
INSERT INTO evidence_v7 (seq, id, digest, chains, priority, idempotency_key, metadata, created_at, updated_at, salt)
	SELECT seq, id, digest, chains, priority, idempotency_key, metadata, created_at, updated_at, salt FROM evidence;

CREATE TABLE outbox_v7 (
	evidence_seq INTEGER NOT NULL REFERENCES evidence_v7(seq),
	chain        TEXT    NOT NULL,
	priority     INTEGER NOT NULL,
	batch_id     INTEGER REFERENCES batches(id),
	leaf_index   INTEGER,
	PRIMARY KEY (evidence_seq, chain)
) WITHOUT ROWID;
INSERT INTO outbox_v7 (evidence_seq, chain, priority, batch_id, leaf_index)
	SELECT evidence_seq, chain, priority, batch_id, leaf_index FROM outbox;

-- The old tables go, children first; renaming evidence_v7 rewrites
-- outbox_v7's reference to it.
DROP TABLE outbox;
DROP TABLE evidence;
ALTER TABLE evidence_v7 RENAME TO evidence;
ALTER TABLE outbox_v7 RENAME TO outbox;
-- Keys and batch membership are indexed only where they exist: most
-- evidence comes without a key, and a pending anchor has no batch yet.
CREATE UNIQUE INDEX evidence_by_key ON evidence(idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX outbox_pending ON outbox(chain, priority, evidence_seq) WHERE batch_id IS NULL;
CREATE INDEX outbox_by_batch ON outbox(batch_id, leaf_index) WHERE batch_id IS NOT NULL;
`,
	// 8: retention (README, "Storage and retention"): confirmed evidence
	// older than KEEPER_EVIDENCE_RETENTION moves to the receipts archive
	// (files of one JSON receipt per line) and its rows go. archives lists
	// those files; archived_evidence says which file holds an evidence's
	// receipt, so a read of it answers 410 naming the file. A batch that
	// loses some of its evidence keeps its leaf hashes in leaves, so the
	// audit paths of the evidence it still holds can be computed.
	`
ALTER TABLE batches ADD COLUMN leaves BLOB;

CREATE TABLE archives (
	id         INTEGER PRIMARY KEY AUTOINCREMENT,
	file       TEXT    NOT NULL,
	size       INTEGER NOT NULL,
	created_at INTEGER NOT NULL
);

CREATE TABLE archived_evidence (
	id         TEXT    PRIMARY KEY,
	archive_id INTEGER NOT NULL REFERENCES archives(id)
) WITHOUT ROWID;
`,
	// 9: intake writes the evidence row alone (README, "Storage"). An
	// anchor's outbox row is written when a batch takes it, so a pending
	// anchor is one without a row: evidence of a lane (chain, priority)
	// taken in after the lane's cursor. Forming a batch inserts the rows
	// of the evidence it takes, in intake order from the cursor, and moves
	// the cursor. Evidence taken in before this migration has its rows
	// already (anchor_start); a retried anchor's row goes back to batch_id
	// NULL and is taken before the lane.
	`
CREATE INDEX evidence_by_lane ON evidence(priority, seq);

CREATE TABLE anchor_start (seq INTEGER NOT NULL);
INSERT INTO anchor_start (seq) SELECT COALESCE(MAX(seq), 0) FROM evidence;

CREATE TABLE anchor_cursors (
	chain    TEXT    NOT NULL,
	priority INTEGER NOT NULL,
	seq      INTEGER NOT NULL,
	PRIMARY KEY (chain, priority)
) WITHOUT ROWID;
`,
	// 10: webhook secret rotation with overlap (README, "Webhooks"). After
	// a rotation the secret it replaced keeps signing beside the new one
	// until previous_secret_until (unix ms; 0 and '' once it has passed or
	// without a grace period).
	`
ALTER TABLE webhook_subscriptions ADD COLUMN previous_secret TEXT NOT NULL DEFAULT '';
ALTER TABLE webhook_subscriptions ADD COLUMN previous_secret_until INTEGER NOT NULL DEFAULT 0;
`,
	// 11: balances while a network retries (docs/backfill.md, "Finish"): a
	// network's computed balances stay readable after its item goes back
	// to work, marked stale until the wallet's finishing step recomputes
	// them; computed_at is when they were computed (0: never). Balances
	// computed before are taken as computed at their last update; rows
	// still waiting for their first computation are stale.
	`
ALTER TABLE wallet_balances ADD COLUMN stale INTEGER NOT NULL DEFAULT 0;
ALTER TABLE wallet_balances ADD COLUMN computed_at INTEGER NOT NULL DEFAULT 0;
UPDATE wallet_balances SET computed_at = updated_at WHERE computed != '';
UPDATE wallet_balances SET stale = 1 WHERE computed = '';
`,
	// 12: the evidence log (docs/log.md): one entry per evidence,
	// SHA-256(salt ‖ digest), at an index assigned once and gap-free in
	// intake order; the tree's stored hashes, numbered as
	// golang.org/x/mod/sumdb/tlog numbers them; every signed checkpoint;
	// the log's state (its size, the last evidence taken in, the key that
	// signs it). A batch records the checkpoint its anchor commits to and
	// the account that sent it.
	`
CREATE TABLE log_entries (
	idx          INTEGER PRIMARY KEY,
	evidence_seq INTEGER NOT NULL UNIQUE,
	entry        BLOB    NOT NULL
);
CREATE TABLE log_hashes (
	id   INTEGER PRIMARY KEY,
	hash BLOB    NOT NULL
);
CREATE TABLE log_checkpoints (
	size       INTEGER PRIMARY KEY,
	root       BLOB    NOT NULL,
	note       TEXT    NOT NULL,
	created_at INTEGER NOT NULL
);
CREATE TABLE log_state (
	id   INTEGER PRIMARY KEY CHECK (id = 1),
	size INTEGER NOT NULL,
	seq  INTEGER NOT NULL,
	vkey TEXT    NOT NULL DEFAULT ''
);
INSERT INTO log_state (id, size, seq) VALUES (1, 0, 0);
ALTER TABLE batches ADD COLUMN log_size INTEGER;
ALTER TABLE batches ADD COLUMN account TEXT NOT NULL DEFAULT '';
`,
}

-- Reward epochs (one row per epoch: its request, where each step's
-- artifacts are and how far it got) and the built-in ledger's intents.

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

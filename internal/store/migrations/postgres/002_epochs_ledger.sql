-- Reward epochs and the built-in ledger's intents.

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

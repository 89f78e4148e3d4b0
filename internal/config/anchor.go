package config

import (
	"cmp"
	"path/filepath"
	"time"
)

// The anchor cadence (docs/anchoring.md, cadence). In production a chain
// gets at most one new batch a minute: 60 anchor transactions an hour, 1,440
// a day, whatever the load. `keeper dev` anchors about once per local block.
const (
	DefaultAnchorInterval = time.Minute
	DevAnchorInterval     = 500 * time.Millisecond
)

// AnchorIntervalFor is the least time between two batches of chain: its own
// KEEPER_<CHAIN>_ANCHOR_INTERVAL when set, else KEEPER_ANCHOR_INTERVAL.
func (c *Config) AnchorIntervalFor(chain string) time.Duration {
	var o OptionalDuration
	switch chain {
	case "etherlink":
		o = c.EtherlinkInterval
	case "solana":
		o = c.SolanaInterval
	case "stub":
		o = c.StubInterval
	}
	if o.Set {
		return o.D
	}
	return c.AnchorInterval
}

// ArchiveDirOrDefault is where retention writes the receipts archive.
func (c *Config) ArchiveDirOrDefault() string {
	return cmp.Or(c.ArchiveDir, filepath.Join(c.DataDir, "receipts-archive"))
}

// anchorKnobs are the settings of how evidence is batched, how often each
// chain is anchored, and how submit and confirm are retried.
func (c *Config) anchorKnobs() []Knob {
	return []Knob{
		{"poll-ms", "KEEPER_POLL_MS", "5000", Node,
			"dispatcher safety-net sweep; intake wakes it at once",
			msKnob{&c.PollInterval}},
		{"batch-max-items", "KEEPER_BATCH_MAX_ITEMS", "16384", API,
			"largest batch: what arrives in one anchor interval shares one transaction and one Merkle tree " +
				"up to this many (a receipt's audit path is log2 of its batch's size: 10 hashes at 1,024, 14 " +
				"at 16,384); 1 = one workflow and one transaction per evidence",
			&c.BatchMaxItems},
		{"batch-max-wait-ms", "KEEPER_BATCH_MAX_WAIT_MS", "200", API,
			"longest a batch grows while an earlier one awaits submission",
			msKnob{&c.BatchMaxWait}},
		{"anchor-interval", "KEEPER_ANCHOR_INTERVAL", DefaultAnchorInterval.String(), API,
			"cadence: per chain at most one new batch per interval, whatever the load, so anchor " +
				"transactions per chain per hour stay ≤ 3600 ÷ interval (plus one per full batch of " +
				"KEEPER_BATCH_MAX_ITEMS); the first evidence after a quiet interval goes at once, priority 1 " +
				"skips the wait. `keeper dev` uses " + DevAnchorInterval.String() +
				" (a local block) unless set; 0 = no interval",
			&c.AnchorInterval},
		{"etherlink-anchor-interval", "KEEPER_ETHERLINK_ANCHOR_INTERVAL", "", API,
			"KEEPER_ANCHOR_INTERVAL for etherlink alone (empty: the common one)",
			&c.EtherlinkInterval},
		{"solana-anchor-interval", "KEEPER_SOLANA_ANCHOR_INTERVAL", "", API,
			"KEEPER_ANCHOR_INTERVAL for solana alone (empty: the common one)",
			&c.SolanaInterval},
		{"stub-anchor-interval", "KEEPER_STUB_ANCHOR_INTERVAL", "", API,
			"KEEPER_ANCHOR_INTERVAL for the stub chain alone (empty: the common one)",
			&c.StubInterval},
		{"batch-min-gap-ms", "KEEPER_BATCH_MIN_GAP_MS", "500", API,
			"under load (a chain's last batch held more than one evidence), least time between two of its " +
				"batches, about a block: anchors closer than that land in one block anyway; a lone evidence " +
				"still goes out at once",
			msKnob{&c.BatchMinGap}},
		{"max-queued-batches", "KEEPER_MAX_QUEUED_BATCHES", "32", API,
			"back-pressure: per chain, batches Temporal has work for (not counting those that only await " +
				"finality) at which the dispatcher forms no more; further evidence waits in the store, so " +
				"under overload the Temporal server works at its ceiling instead of queuing tasks it cannot " +
				"serve (0 = no limit)",
			&c.MaxQueued},
	}
}

// retryKnobs are the settings of how long a submit or confirm attempt may
// take and how it is retried (docs/retries.md).
func (c *Config) retryKnobs() []Knob {
	return []Knob{
		{"max-attempts", "KEEPER_MAX_ATTEMPTS", "0", API,
			"attempts per submit or confirm before the batch is dead-lettered; 0 = no limit: a transient " +
				"failure (an RPC provider down for hours) is retried on the backoff schedule for as long as it " +
				"lasts, and only permanent failures and repeated drops dead-letter (docs/retries.md)",
			&c.MaxAttempts},
		{"retry-base-ms", "KEEPER_RETRY_BASE_MS", "5000", Node,
			"retry delay base: min(base·2^attempt, cap) + jitter",
			msKnob{&c.RetryBase}},
		{"retry-cap-ms", "KEEPER_RETRY_CAP_MS", "300000", Node,
			"retry delay cap",
			msKnob{&c.RetryCap}},
		{"retry-jitter-ms", "KEEPER_RETRY_JITTER_MS", "1000", Worker,
			"uniform retry jitter upper bound",
			msKnob{&c.RetryJitter}},
		{"submit-timeout", "KEEPER_SUBMIT_TIMEOUT", "1m", API,
			"longest one SubmitAnchor attempt may take before Temporal retries it",
			&c.SubmitTimeout},
		{"confirm-timeout", "KEEPER_CONFIRM_TIMEOUT", "1h", API,
			"longest one ConfirmAnchor attempt awaits finality: an attempt no finality watcher completes " +
				"is retried after this long",
			&c.ConfirmTimeout},
	}
}

// intakeKnobs are the settings of what the API takes in: back-pressure on
// intake and the largest request bodies.
func (c *Config) intakeKnobs() []Knob {
	return []Knob{
		{"max-pending", "KEEPER_MAX_PENDING", "10000", API,
			"pending evidence at or above which priority 6–10 gets 429 `overloaded`",
			&c.MaxPending},
		{"max-backlog", "KEEPER_MAX_BACKLOG", "0", API,
			"the ceiling of pending evidence, for every priority: at it priority 1–5 waits up to " +
				"KEEPER_INTAKE_WAIT for a batch to make room, then gets 429 `backlog_full`, so intake never " +
				"outruns batching by more than this; 0 = 4 × KEEPER_MAX_PENDING; at least KEEPER_MAX_PENDING",
			&c.MaxBacklog},
		{"intake-wait", "KEEPER_INTAKE_WAIT", "50ms", API,
			"how long intake of priority 1–5 waits for room at KEEPER_MAX_BACKLOG before answering 429, " +
				"well inside intake's 100 ms latency target (docs/anchoring.md); 0 = answer at once",
			&c.IntakeWait},
		{"max-body-bytes", "KEEPER_MAX_BODY_BYTES", "1048576", API,
			"largest request body (413 above)",
			&c.MaxBodyBytes},
		{"max-batch-body-bytes", "KEEPER_MAX_BATCH_BODY_BYTES", "18432000", API,
			"largest POST /v1/evidence/batch body (413 above); the default holds 1,000 items with 16 KiB " +
				"of metadata each",
			&c.MaxBatchBodyBytes},
	}
}

// retentionKnobs are the settings of how long confirmed evidence stays in
// the store, and where it goes after.
func (c *Config) retentionKnobs() []Knob {
	return []Knob{
		{"evidence-retention", "KEEPER_EVIDENCE_RETENTION", "0", API,
			"retention: confirmed evidence taken in longer ago than this (e.g. 2160h for 90 days) moves " +
				"into the receipts archive and its rows are deleted; reading it then answers 410 naming the " +
				"archive file, and `keeper receipt --archive DIR` reads it from there. Its idempotency key " +
				"goes with it, so a key is de-duplicated for at least this long. 0 = keep everything",
			&c.EvidenceRetention},
		{"receipts-archive-dir", "KEEPER_RECEIPTS_ARCHIVE_DIR", "", API,
			"retention: directory of the receipts archive (gzip files of one JSON receipt per line, " +
				"written whole, never changed; back it up); with several API nodes, a directory they share. " +
				"Empty: <data-dir>/receipts-archive",
			&c.ArchiveDir},
	}
}

package config

import (
	"cmp"
	"path/filepath"
	"time"
)

// EpochConfig configures reward epochs (docs/epochs.md).
type EpochConfig struct {
	MaxInFlight     int           // epochs queued or computing at once; the next gets 429
	Duration        time.Duration // epoch_duration: an epoch gets half of it (or the caller's sooner deadline)
	Heartbeat       time.Duration // a long epoch step whose worker stops heartbeating is retried after this long
	ArtifactDir     string        // empty: <data-dir>/artifacts
	LedgerURL       string        // empty: the built-in ledger in keeper's store
	UpstreamTimeout time.Duration // an accounting source or ledger call without progress for this long is retried
	AcceptTimeout   time.Duration // compute answers 503 when Temporal has not accepted the workflow within this long
}

// ArtifactDirOrDefault is where epoch artifacts go.
func (c *Config) ArtifactDirOrDefault() string {
	return cmp.Or(c.Epochs.ArtifactDir, filepath.Join(c.DataDir, "artifacts"))
}

// epochKnobs are the settings of reward epochs.
func (c *Config) epochKnobs() []Knob {
	return []Knob{
		{"max-epochs-in-flight", "KEEPER_MAX_EPOCHS_IN_FLIGHT", "64", API,
			"reward epochs queued or computing at once; one more gets 429 with Retry-After",
			&c.Epochs.MaxInFlight},
		{"epoch-duration", "KEEPER_EPOCH_DURATION", "1h", API,
			"an epoch must finish within half of this, or by the caller's `deadline` when sooner",
			&c.Epochs.Duration},
		{"epoch-heartbeat-ms", "KEEPER_EPOCH_HEARTBEAT_MS", "10000", API,
			"a long epoch step (fetch, emit intents) whose worker stops heartbeating is retried elsewhere " +
				"after this long",
			msKnob{&c.Epochs.Heartbeat}},
		{"artifact-dir", "KEEPER_ARTIFACT_DIR", "", Worker,
			"epoch artifacts (sealed inputs, payouts, run.json, commitment), shared by every epoch worker; " +
				"empty: <data-dir>/artifacts",
			&c.Epochs.ArtifactDir},
		{"ledger-url", "KEEPER_LEDGER_URL", "", Node,
			"settlement ledger that takes epoch intents (POST <url>/ledger/v1/intents); empty: keeper's " +
				"built-in ledger, kept in keeper's store and served at /ledger/v1",
			&c.Epochs.LedgerURL},
		{"upstream-timeout-ms", "KEEPER_UPSTREAM_TIMEOUT_MS", "5000", Worker,
			"an accounting-source or ledger call that makes no progress for this long is abandoned and " + "retried",
			msKnob{&c.Epochs.UpstreamTimeout}},
		{"compute-accept-timeout", "KEEPER_COMPUTE_ACCEPT_TIMEOUT", "2s", API,
			"`POST /rewarder/epochs/{id}/compute` answers within this long: 202 once Temporal accepted the " +
				"epoch's workflow, else 503 `temporal_unavailable` with Retry-After (the epoch stays queued; " +
				"the same request again starts or joins it)",
			&c.Epochs.AcceptTimeout},
	}
}

package config

import (
	"cmp"
	"path/filepath"
	"time"
)

// LogConfig is the evidence log's settings.
type LogConfig struct {
	Origin             string        // the log's name in its checkpoints
	KeyFile            string        // its note signer key; empty: DefaultLogKeyFile in the data directory
	CheckpointInterval time.Duration // longest time between checkpoints while the log grows
}

// The evidence log's defaults (docs/log.md): `keeper dev` signs a checkpoint
// twice a second, a node once a second, while the log grows.
const (
	DefaultLogOrigin             = "keeper.localhost/log"
	DefaultLogCheckpointInterval = time.Second
	DevLogCheckpointInterval     = 500 * time.Millisecond
	DefaultLogKeyFileName        = "log-signer.key"
)

// LogKeyFileOrDefault is the log's signing key file.
func (c *Config) LogKeyFileOrDefault() string {
	return cmp.Or(c.Log.KeyFile, filepath.Join(c.DataDir, DevKeyDir, DefaultLogKeyFileName))
}

// logKnobs are the settings of the evidence log anchored batches are
// handed to: its name, its key, how often it signs a checkpoint.
func (c *Config) logKnobs() []Knob {
	return []Knob{
		{"log-origin", "KEEPER_LOG_ORIGIN", DefaultLogOrigin, LogSigner,
			"the evidence log's origin, the name in its checkpoints and its key: a scheme-less URL where " +
				"the log is served, such as keeper.example.org/log (docs/log.md)",
			&c.Log.Origin},
		{"log-key-file", "KEEPER_LOG_KEY_FILE", "", LogSigner,
			"the evidence log's signing key (a note signer key, `keeper log keygen` makes one); empty: " + DevKeyDir +
				"/" + DefaultLogKeyFileName +
				" in the data directory, made at first start. Every worker of a deployment needs the same key",
			&c.Log.KeyFile},
		{"log-checkpoint-interval", "KEEPER_LOG_CHECKPOINT_INTERVAL", DefaultLogCheckpointInterval.String(), Worker | LogMirror,
			"longest time between two signed checkpoints while the log grows. `keeper dev` uses " +
				DevLogCheckpointInterval.String() + " unless set",
			&c.Log.CheckpointInterval},
	}
}

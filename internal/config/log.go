package config

import (
	"cmp"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/keeperhq/keeper/evlog"
)

// LogConfig is the evidence log's settings.
type LogConfig struct {
	Origin             string        // the log's name in its checkpoints
	KeyFile            string        // its note signer key; empty: DefaultLogKeyFile in the data directory
	CheckpointInterval time.Duration // longest time between checkpoints while the log grows
	// Witnesses are the witnesses the log's checkpoints are submitted to,
	// each "<verifier key> <URL>" (c2sp.org/tlog-witness; LogWitnesses
	// reads them), and WitnessQuorum how many must cosign (0: all).
	Witnesses     []string
	WitnessQuorum int
}

// LogWitness is one witness of KEEPER_LOG_WITNESSES.
type LogWitness struct {
	Key evlog.WitnessKey
	URL string
}

// LogWitnesses reads KEEPER_LOG_WITNESSES, and the quorum they make
// (KEEPER_LOG_WITNESS_QUORUM, 0 meaning every one listed).
func (c *Config) LogWitnesses() ([]LogWitness, int, error) {
	var out []LogWitness
	seen := map[string]bool{}
	for i, s := range c.Log.Witnesses {
		vkey, rawURL, ok := strings.Cut(strings.TrimSpace(s), " ")
		rawURL = strings.TrimSpace(rawURL)
		if !ok || rawURL == "" {
			return nil, 0, fmt.Errorf("KEEPER_LOG_WITNESSES: entry %d: write \"<witness verifier key> <URL>\", entries separated by commas", i+1)
		}
		k, err := evlog.ParseWitnessKey(vkey)
		if err != nil {
			return nil, 0, fmt.Errorf("KEEPER_LOG_WITNESSES: entry %d: %w", i+1, err)
		}
		u, err := url.Parse(rawURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
			return nil, 0, fmt.Errorf("KEEPER_LOG_WITNESSES: entry %d (%s): its URL is not http(s)://host[/prefix] without credentials", i+1, k.Name)
		}
		if seen[k.Name] {
			return nil, 0, fmt.Errorf("KEEPER_LOG_WITNESSES: witness %q is listed twice", k.Name)
		}
		seen[k.Name] = true
		out = append(out, LogWitness{Key: k, URL: u.String()})
	}
	q := c.Log.WitnessQuorum
	switch {
	case q < 0 || q > len(out):
		return nil, 0, fmt.Errorf("KEEPER_LOG_WITNESS_QUORUM: %d: between 1 and the %d witnesses listed (0: all of them)", q, len(out))
	case q == 0:
		q = len(out)
	}
	return out, q, nil
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
		{"log-witnesses", "KEEPER_LOG_WITNESSES", "", Worker | API,
			"the witnesses that cosign the log's checkpoints (c2sp.org/tlog-witness): comma-separated entries " +
				"\"<verifier key> <URL>\", the URL the prefix of the witness's /add-checkpoint. Listed in the trust root " +
				"from the log's next checkpoint; receipts then wait for the quorum (docs/log.md, Witnesses)",
			&c.Log.Witnesses},
		{"log-witness-quorum", "KEEPER_LOG_WITNESS_QUORUM", "0", Worker | API,
			"how many of KEEPER_LOG_WITNESSES must cosign a checkpoint before receipts name it (0: all of them). " +
				"Raised in the trust root from the log's next checkpoint; never lowered",
			&c.Log.WitnessQuorum},
	}
}

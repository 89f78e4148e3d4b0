package config

import "time"

// DevConfig is what only the dev stack reads: the embedded Temporal server of
// `keeper dev` and `keeper devserver`, and the local chains `keeper dev` and
// `keeper devchains` start. Its knobs (KEEPER_DEV_*) are bound as flags on
// those commands alone (Uses DevServer and LocalChains), so `keeper worker
// --help` shows none.
type DevConfig struct {
	TemporalPort int    // the embedded Temporal frontend's port
	UIPort       int    // the Temporal Web UI's port (0: no UI)
	TemporalDB   string // PostgreSQL URL for the embedded server; empty: SQLite temporal.db in the data directory
	TLSCert      string // `keeper devserver`: the frontend's TLS certificate
	TLSKey       string
	TLSClientCA  string // `keeper devserver`: require client certificates signed by this CA

	EVMPort        int           // the local EVM chain's JSON-RPC port
	EVMBlockTime   time.Duration // the local EVM chain's block time
	SolanaPort     int           // the local Solana devnet's JSON-RPC port
	SolanaSlotTime time.Duration // the local Solana devnet's slot time

	Witnesses int // `keeper dev`: local witnesses of the log, listed with quorum all of them
}

// devPreset names `keeper dev`'s defaults as the source of what they set.
const devPreset = "keeper dev"

// DevCadence gives `keeper dev` (and `keeper bench`) its quick feel: unless
// given in the environment Load read or by a flag (explicit reports whether
// a flag was given; a flag Bind bound says so itself), a chain anchors
// about once per local block and the log signs a checkpoint twice a second.
func (c *Config) DevCadence(explicit func(flag string) bool) {
	p := preset{c: c, given: c.explicit(explicit), name: devPreset}
	p.set("KEEPER_ANCHOR_INTERVAL", func() { c.AnchorInterval = DevAnchorInterval })
	p.set("KEEPER_LOG_CHECKPOINT_INTERVAL", func() { c.Log.CheckpointInterval = DevLogCheckpointInterval })
}

// DevURLs lets `keeper dev` fetch from local servers (a usage source on
// 127.0.0.1), unless KEEPER_WEBHOOK_ALLOW_PRIVATE was given: in the
// environment Load read, or as a flag (explicit).
func (c *Config) DevURLs(explicit bool) {
	if explicit {
		return
	}
	p := preset{c: c, given: c.explicit(nil), name: devPreset}
	p.set("KEEPER_WEBHOOK_ALLOW_PRIVATE", func() { c.AllowPrivateURLs = true })
}

// devServerKnobs are the settings of the embedded Temporal server and of
// Go's profiles, which only the dev stack serves.
func (c *Config) devServerKnobs() []Knob {
	return []Knob{
		{"dev-temporal-port", "KEEPER_DEV_TEMPORAL_PORT", "7233", DevServer,
			"the embedded Temporal frontend's port (`keeper dev`, `devserver`)",
			&c.Dev.TemporalPort},
		{"dev-ui-port", "KEEPER_DEV_UI_PORT", "8233", DevServer,
			"the embedded Temporal Web UI's port (`keeper dev`, `devserver`; 0 = no UI)",
			&c.Dev.UIPort},
		{"db", "KEEPER_DEV_TEMPORAL_DB", "", DevServer,
			"`keeper devserver` and `keeper dev`: run the embedded Temporal server on PostgreSQL: " +
				"postgres://user:password@host:5432/temporal (databases <name> and <name>_visibility, created " +
				"and set up when missing; query parameters such as sslmode=require go to the connection); " +
				"empty: SQLite temporal.db in the data directory",
			&c.Dev.TemporalDB},
		{"tls-cert", "KEEPER_DEV_TLS_CERT", "", DevServer,
			"`keeper devserver`: PEM certificate the embedded Temporal frontend serves TLS with (needs " +
				"--tls-key); empty: plaintext",
			&c.Dev.TLSCert},
		{"tls-key", "KEEPER_DEV_TLS_KEY", "", DevServer,
			"`keeper devserver`: PEM private key of --tls-cert",
			&c.Dev.TLSKey},
		{"tls-client-ca", "KEEPER_DEV_TLS_CLIENT_CA", "", DevServer,
			"`keeper devserver`: PEM CA bundle; when set, every Temporal client must present a certificate " +
				"it signed (mTLS)",
			&c.Dev.TLSClientCA},
		{"pprof", "KEEPER_PPROF_ADDR", "", Profiling,
			"`keeper dev` and `keeper bench`: serve Go's pprof profiles (/debug/pprof/) on this address, e.g. 127.0.0.1:6060; empty: off",
			&c.PprofAddr},
	}
}

// devChainKnobs are the settings of the local chains `keeper dev` and
// `keeper devchains` run.
func (c *Config) devChainKnobs() []Knob {
	return []Knob{
		{"dev-evm-port", "KEEPER_DEV_EVM_PORT", "8545", LocalChains,
			"JSON-RPC port of the local EVM chain (`keeper dev`, `devchains`)",
			&c.Dev.EVMPort},
		{"dev-evm-block-ms", "KEEPER_DEV_EVM_BLOCK_MS", "500", LocalChains,
			"block time of the local EVM chain (`keeper dev`, `devchains`); its timestamps follow the wall clock, so it seals " +
				"at most about a block a second (docs/chains.md)",
			msKnob{&c.Dev.EVMBlockTime}},
		{"dev-solana-port", "KEEPER_DEV_SOLANA_PORT", "8899", LocalChains,
			"JSON-RPC port of the local Solana devnet (`keeper dev`, `devchains`)",
			&c.Dev.SolanaPort},
		{"dev-solana-slot-ms", "KEEPER_DEV_SOLANA_SLOT_MS", "400", LocalChains,
			"slot time of the local Solana devnet (`keeper dev`, `devchains`)",
			msKnob{&c.Dev.SolanaSlotTime}},
		{"witnesses", "KEEPER_DEV_WITNESSES", "0", LocalWitnesses,
			"`keeper dev`: start N witnesses of the log in the process (`keeper witness`, state in the data directory) and list " +
				"them in KEEPER_LOG_WITNESSES and the trust root with a quorum of N, so receipts carry their cosignatures (docs/log.md, Witnesses)",
			&c.Dev.Witnesses},
	}
}

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
}

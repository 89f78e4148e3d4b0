package config

import (
	"fmt"
	"time"
)

// BackfillConfig configures wallet backfill (docs/backfill.md, docs/retries.md).
type BackfillConfig struct {
	Workers        int           // concurrent scans per worker process
	EtherlinkStart int64         // first EtherLink block scanned
	SolanaStart    int64         // first Solana slot scanned
	EVMChunkBlocks int           // EVM blocks between checkpoints
	EVMMaxLogs     int           // an eth_getLogs answer this long is split (the node may have truncated it)
	SolanaChunk    int           // Solana signatures between checkpoints
	RetryBase      time.Duration // default 2 min
	RetryCap       time.Duration // default 60 min
	RetryJitterPct int           // default 25
	MaxRetries     int           // default 5, then ABANDONED
	Heartbeat      time.Duration // a scan whose worker stops heartbeating moves on after this long
	Reconcile      time.Duration // how often a worker hands Temporal again the items without a live workflow (docs/backfill.md, "Outages")
}

func (b *BackfillConfig) validate() error {
	switch {
	case b.Workers < 1:
		return fmt.Errorf("KEEPER_BACKFILL_WORKERS: must be at least 1, got %d", b.Workers)
	case b.EtherlinkStart < 0 || b.SolanaStart < 0:
		return fmt.Errorf("KEEPER_BACKFILL_ETHERLINK_START_BLOCK and KEEPER_BACKFILL_SOLANA_START_SLOT must not be negative")
	case b.EVMMaxLogs < 1:
		return fmt.Errorf("KEEPER_BACKFILL_EVM_MAX_LOGS: must be at least 1, got %d", b.EVMMaxLogs)
	case b.EVMChunkBlocks < 1 || b.SolanaChunk < 1:
		return fmt.Errorf("KEEPER_BACKFILL_EVM_CHUNK_BLOCKS and KEEPER_BACKFILL_SOLANA_CHUNK must be at least 1")
	case b.RetryBase <= 0 || b.RetryCap < b.RetryBase:
		return fmt.Errorf("KEEPER_BACKFILL_RETRY_BASE_MS must be positive and KEEPER_BACKFILL_RETRY_CAP_MS at least as long")
	case b.RetryJitterPct < 0 || b.RetryJitterPct > 100:
		return fmt.Errorf("KEEPER_BACKFILL_RETRY_JITTER_PCT: must be 0–100, got %d", b.RetryJitterPct)
	case b.MaxRetries < 0:
		return fmt.Errorf("KEEPER_BACKFILL_MAX_RETRIES: must not be negative, got %d", b.MaxRetries)
	case b.Heartbeat < 100*time.Millisecond:
		return fmt.Errorf("KEEPER_BACKFILL_HEARTBEAT_MS: must be at least 100, got %d", b.Heartbeat.Milliseconds())
	case b.Reconcile < 100*time.Millisecond:
		return fmt.Errorf("KEEPER_BACKFILL_RECONCILE_MS: must be at least 100, got %d", b.Reconcile.Milliseconds())
	}
	return nil
}

// backfillKnobs are the settings of wallet backfill.
func (c *Config) backfillKnobs() []Knob {
	return []Knob{
		{"backfill-workers", "KEEPER_BACKFILL_WORKERS", "4", Worker,
			"concurrent wallet-backfill scans per worker process (task queue `keeper-backfill`); a free " +
				"slot takes the next item at once",
			&c.Backfill.Workers},
		{"backfill-etherlink-start-block", "KEEPER_BACKFILL_ETHERLINK_START_BLOCK", "0", API,
			"first EtherLink block a wallet backfill scans",
			&c.Backfill.EtherlinkStart},
		{"backfill-solana-start-slot", "KEEPER_BACKFILL_SOLANA_START_SLOT", "0", API,
			"first Solana slot a wallet backfill scans",
			&c.Backfill.SolanaStart},
		{"backfill-evm-chunk-blocks", "KEEPER_BACKFILL_EVM_CHUNK_BLOCKS", "500", Worker,
			"EVM blocks scanned between two checkpoints",
			&c.Backfill.EVMChunkBlocks},
		{"backfill-evm-max-logs", "KEEPER_BACKFILL_EVM_MAX_LOGS", "10000", Worker,
			"an eth_getLogs answer this long is taken as truncated and its range split (etherlink presets: " +
				"5000, the public endpoint's cap)",
			&c.Backfill.EVMMaxLogs},
		{"backfill-solana-chunk", "KEEPER_BACKFILL_SOLANA_CHUNK", "100", Worker,
			"Solana signatures fetched between two checkpoints",
			&c.Backfill.SolanaChunk},
		{"backfill-retry-base-ms", "KEEPER_BACKFILL_RETRY_BASE_MS", "120000", Node,
			"a failed backfill item is retried after min(base·2^(retry−1), cap) + jitter",
			msKnob{&c.Backfill.RetryBase}},
		{"backfill-retry-cap-ms", "KEEPER_BACKFILL_RETRY_CAP_MS", "3600000", Node,
			"backfill retry delay cap",
			msKnob{&c.Backfill.RetryCap}},
		{"backfill-retry-jitter-pct", "KEEPER_BACKFILL_RETRY_JITTER_PCT", "25", Node,
			"backfill retry jitter: up to this percentage of the delay, uniform",
			&c.Backfill.RetryJitterPct},
		{"backfill-max-retries", "KEEPER_BACKFILL_MAX_RETRIES", "5", Node,
			"retries before a backfill item is ABANDONED (adding the wallet again starts it anew)",
			&c.Backfill.MaxRetries},
		{"backfill-heartbeat-ms", "KEEPER_BACKFILL_HEARTBEAT_MS", "30000", Node,
			"a scan whose worker stops heartbeating resumes from its checkpoint on another worker after " +
				"this long",
			msKnob{&c.Backfill.Heartbeat}},
		{"backfill-reconcile-ms", "KEEPER_BACKFILL_RECONCILE_MS", "60000", Worker,
			"each worker, at start and then this often, hands Temporal again any backfill item that should " +
				"be at work but has no live workflow (PENDING or RUNNING, or FAILED past its next retry; see " +
				"[Backfill](backfill.md#outages))",
			msKnob{&c.Backfill.Reconcile}},
	}
}

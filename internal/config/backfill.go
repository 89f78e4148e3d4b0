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

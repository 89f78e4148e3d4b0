package config

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Validate reports the first setting that cannot work.
func (c *Config) Validate() error {
	for _, check := range []func() error{
		c.validateServer, c.validateLog, c.validateAnchoring, c.validateIntake, c.validateWebhooks,
		c.validateEpochs, c.validateEVM, c.validateSolana, c.Backfill.validate, c.Versioning.validate,
		c.validateDefaulted,
	} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// validateServer checks the settings of the processes themselves: the
// store, the API server's timeouts, the log format, the codec's origins.
func (c *Config) validateServer() error {
	switch {
	case c.ActivityWorkers < 1:
		return fmt.Errorf("KEEPER_ACTIVITY_WORKERS: must be at least 1, got %d", c.ActivityWorkers)
	case c.HTTP.ReadTimeout <= 0 || c.HTTP.WriteTimeout <= 0 || c.HTTP.IdleTimeout <= 0 || c.HTTP.LongRequest <= 0:
		return fmt.Errorf("KEEPER_HTTP_READ_TIMEOUT, KEEPER_HTTP_WRITE_TIMEOUT, KEEPER_HTTP_IDLE_TIMEOUT and KEEPER_HTTP_LONG_TIMEOUT must be positive")
	case c.LogFormat != "" && c.LogFormat != "json" && c.LogFormat != "text":
		return fmt.Errorf("KEEPER_LOG_FORMAT: must be json or text, got %q", c.LogFormat)
	}
	if u := c.StoreURL; u != "" && !strings.HasPrefix(u, "postgres://") && !strings.HasPrefix(u, "postgresql://") {
		// Not echoed: it may hold a password.
		return fmt.Errorf("KEEPER_STORE_URL: must be a postgres:// or postgresql:// URL")
	}
	for _, o := range c.CodecCORSOrigins {
		if !isOrigin(o) {
			return fmt.Errorf("KEEPER_CODEC_CORS_ORIGINS: %q is not an origin: want scheme://host[:port], nothing after it", o)
		}
	}
	return nil
}

// validateLog checks the evidence log's settings (docs/log.md).
func (c *Config) validateLog() error {
	switch {
	case c.Log.CheckpointInterval <= 0:
		return fmt.Errorf("KEEPER_LOG_CHECKPOINT_INTERVAL: must be positive, got %s", c.Log.CheckpointInterval)
	case c.Log.Origin != "" && strings.Contains(c.Log.Origin, "://"):
		return fmt.Errorf("KEEPER_LOG_ORIGIN: %q has a scheme; write it without, such as keeper.example.org/log", c.Log.Origin)
	case strings.ContainsAny(c.Log.Origin, "+ \t\r\n"):
		return fmt.Errorf("KEEPER_LOG_ORIGIN: %q may not hold spaces or +", c.Log.Origin)
	}
	if c.Dev.Witnesses < 0 || c.Dev.Witnesses > 16 {
		return fmt.Errorf("KEEPER_DEV_WITNESSES: %d: between 0 and 16 local witnesses", c.Dev.Witnesses)
	}
	_, _, err := c.LogWitnesses()
	return err
}

// validateAnchoring checks the chains asked for and how batches are formed,
// paced and retried (docs/anchoring.md, docs/retries.md).
func (c *Config) validateAnchoring() error {
	if len(c.Chains) == 0 {
		return fmt.Errorf("KEEPER_CHAINS: at least one chain is required")
	}
	for _, ch := range c.Chains {
		if ch != "stub" && ch != "etherlink" && ch != "solana" {
			return fmt.Errorf("KEEPER_CHAINS: unknown chain %q (known: etherlink, solana, stub)", ch)
		}
	}
	switch {
	case c.BatchMaxItems < 1:
		return fmt.Errorf("KEEPER_BATCH_MAX_ITEMS: must be at least 1, got %d", c.BatchMaxItems)
	case c.AnchorInterval < 0 || c.EtherlinkInterval.D < 0 || c.SolanaInterval.D < 0 || c.StubInterval.D < 0:
		return fmt.Errorf("KEEPER_ANCHOR_INTERVAL and KEEPER_<CHAIN>_ANCHOR_INTERVAL must not be negative")
	case c.MaxAttempts < 0:
		return fmt.Errorf("KEEPER_MAX_ATTEMPTS: must be 0 (no limit) or more, got %d", c.MaxAttempts)
	case c.PollInterval <= 0 || c.ConfirmPoll <= 0:
		return fmt.Errorf("KEEPER_POLL_MS and KEEPER_CONFIRM_POLL_MS must be positive")
	case c.MaxQueued < 0:
		return fmt.Errorf("KEEPER_MAX_QUEUED_BATCHES: must be 0 (no limit) or more, got %d", c.MaxQueued)
	}
	return nil
}

// validateIntake checks what the API takes in and keeps (docs/api.md).
func (c *Config) validateIntake() error {
	switch {
	case c.MaxBodyBytes < 1024:
		return fmt.Errorf("KEEPER_MAX_BODY_BYTES: must be at least 1024, got %d", c.MaxBodyBytes)
	case c.MaxBatchBodyBytes < 1024:
		return fmt.Errorf("KEEPER_MAX_BATCH_BODY_BYTES: must be at least 1024, got %d", c.MaxBatchBodyBytes)
	case c.MaxBacklog != 0 && c.MaxBacklog < c.MaxPending:
		return fmt.Errorf("KEEPER_MAX_BACKLOG: must be 0 (4 × KEEPER_MAX_PENDING) or at least KEEPER_MAX_PENDING (%d), got %d", c.MaxPending, c.MaxBacklog)
	case c.IntakeWait < 0:
		return fmt.Errorf("KEEPER_INTAKE_WAIT: must not be negative, got %s", c.IntakeWait)
	case c.EvidenceRetention < 0:
		return fmt.Errorf("KEEPER_EVIDENCE_RETENTION: must be 0 (keep everything) or a positive duration such as 2160h, got %s", c.EvidenceRetention)
	}
	return nil
}

// validateWebhooks checks the delivery schedule (docs/webhooks.md).
func (c *Config) validateWebhooks() error {
	w := c.Webhook
	switch {
	case w.RetryWindow <= 0 || w.RetryBase <= 0 || w.Timeout <= 0 || w.RetryCap < w.RetryBase:
		return fmt.Errorf("KEEPER_WEBHOOK_RETRY_WINDOW, KEEPER_WEBHOOK_RETRY_BASE and KEEPER_WEBHOOK_TIMEOUT must be positive " +
			"and KEEPER_WEBHOOK_RETRY_CAP at least the base")
	case w.RotationGrace < 0 || w.RotationGrace > MaxRotationGrace:
		return fmt.Errorf("KEEPER_WEBHOOK_ROTATION_GRACE: must be from 0 to %s, got %s", MaxRotationGrace, w.RotationGrace)
	case w.DisableAfter < 0:
		return fmt.Errorf("KEEPER_WEBHOOK_DISABLE_AFTER: must be 0 (never) or more, got %s", w.DisableAfter)
	}
	return nil
}

// validateEpochs checks the reward epochs' settings (docs/epochs.md).
func (c *Config) validateEpochs() error {
	e := c.Epochs
	switch {
	case e.MaxInFlight < 1:
		return fmt.Errorf("KEEPER_MAX_EPOCHS_IN_FLIGHT: must be at least 1, got %d", e.MaxInFlight)
	case e.Duration < 2*time.Second:
		return fmt.Errorf("KEEPER_EPOCH_DURATION: must be at least 2s, got %v", e.Duration)
	case e.Heartbeat <= 0 || e.UpstreamTimeout <= 0:
		return fmt.Errorf("KEEPER_EPOCH_HEARTBEAT_MS and KEEPER_UPSTREAM_TIMEOUT_MS must be positive")
	case e.AcceptTimeout <= 0:
		return fmt.Errorf("KEEPER_COMPUTE_ACCEPT_TIMEOUT: must be positive, got %s", e.AcceptTimeout)
	}
	if u := e.LedgerURL; u != "" {
		if p, err := url.Parse(u); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return fmt.Errorf("KEEPER_LEDGER_URL: must be an http or https URL, got %q", u)
		}
	}
	return nil
}

// validateEVM checks the EtherLink adapter's settings.
func (c *Config) validateEVM() error {
	switch {
	case c.EVM.Network != "custom" && evmNetworks[c.EVM.Network].chainID == 0:
		return fmt.Errorf("KEEPER_EVM_NETWORK: must be etherlink-mainnet, etherlink-testnet or custom, got %q", c.EVM.Network)
	case c.EVM.BlockTime < 0 || c.EVM.FinalityStall <= 0:
		return fmt.Errorf("KEEPER_EVM_BLOCK_MS must not be negative and KEEPER_EVM_FINALITY_STALL_MS must be positive")
	case c.EVM.ArchiveRPCURL != "" && !httpURL(c.EVM.ArchiveRPCURL):
		return fmt.Errorf("%s: not an http(s) URL", archiveEnv("evm"))
	}
	return c.EVM.RPC.validate(c.EVM.RPCURL, "KEEPER_EVM")
}

// validateSolana checks the Solana adapter's settings.
func (c *Config) validateSolana() error {
	s := c.Solana
	switch {
	case s.Commitment != "confirmed" && s.Commitment != "finalized":
		return fmt.Errorf("KEEPER_SOLANA_COMMITMENT: must be confirmed or finalized, got %q", s.Commitment)
	case !slices.Contains(SolanaClusters, s.Cluster):
		return fmt.Errorf("KEEPER_SOLANA_CLUSTER: must be mainnet-beta, devnet, testnet or custom, got %q", s.Cluster)
	case s.PriorityFee < 0 || s.MaxPriorityFee < 0:
		return fmt.Errorf("KEEPER_SOLANA_PRIORITY_FEE and KEEPER_SOLANA_MAX_PRIORITY_FEE must not be negative")
	case s.MaxPriorityFee > 0 && s.PriorityFee > s.MaxPriorityFee:
		return fmt.Errorf("KEEPER_SOLANA_PRIORITY_FEE (%d) must not be above KEEPER_SOLANA_MAX_PRIORITY_FEE (%d)", s.PriorityFee, s.MaxPriorityFee)
	}
	return s.RPC.validate(s.RPCURL, "KEEPER_SOLANA")
}

// validateDefaulted rejects a negative value of each setting whose consumer
// takes 0 as "use the default": the consumer does not check for less, so a
// negative value must not get past here. (The _MS settings are refused
// below 0 as they are read.)
func (c *Config) validateDefaulted() error {
	for _, s := range []struct {
		env string
		got int64
	}{
		{"KEEPER_MAX_BACKLOG", int64(c.MaxBacklog)},
		{"KEEPER_MAX_IN_FLIGHT", int64(c.MaxInFlight)},
		{"KEEPER_EVM_RPC_CONNECTIONS", int64(c.EVM.RPCConnections)},
		{"KEEPER_SOLANA_RPC_CONNECTIONS", int64(c.Solana.RPCConnections)},
	} {
		if s.got < 0 {
			return fmt.Errorf("%s: must not be negative (0 takes the default), got %d", s.env, s.got)
		}
	}
	return nil
}

// isOrigin reports whether o is a browser origin such as http://127.0.0.1:8233.
func isOrigin(o string) bool {
	u, err := url.Parse(o)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" &&
		u.Path == "" && u.RawQuery == "" && u.Fragment == "" && u.User == nil && u.Scheme+"://"+u.Host == o
}

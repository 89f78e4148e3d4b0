package node

import (
	"cmp"
	"context"
	"fmt"

	"go.temporal.io/sdk/client"

	"github.com/keeperhq/keeper/internal/anchor"
	"github.com/keeperhq/keeper/internal/config"
	"github.com/keeperhq/keeper/internal/retry"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/workflows"
)

// anchorSchedule is the schedule of anchor submit and confirm attempts the
// configuration asks for: retry.Anchor with KEEPER_RETRY_BASE_MS,
// KEEPER_RETRY_CAP_MS and KEEPER_RETRY_JITTER_MS (docs/retries.md, anchor).
func anchorSchedule(cfg config.Config) retry.Schedule {
	s := retry.Anchor
	s.Base, s.Cap, s.Jitter = cfg.RetryBase, cfg.RetryCap, cfg.RetryJitter
	return s
}

// Policy is the AnchorBatch policy the configuration asks for.
func Policy(cfg config.Config) workflows.AnchorPolicy {
	return workflows.AnchorPolicy{
		MaxAttempts:    int32(cfg.MaxAttempts),
		RetryBase:      cfg.RetryBase,
		RetryCap:       cfg.RetryCap,
		SubmitTimeout:  cfg.SubmitTimeout,
		ConfirmTimeout: cfg.ConfirmTimeout,
		// ConfirmAnchor holds no slot and does not heartbeat: the worker's
		// finality watcher completes it (anchor.Watcher).
		Heartbeat:    0,
		MaxResubmits: 10,
	}
}

// startAnchorWorker starts the anchoring worker with its finality watcher,
// its anchors committing to the evidence log of seq.
func (n *Node) startAnchorWorker(seq anchor.LogCheckpoints, namespace string) error {
	cfg := n.Cfg
	acts := &anchor.Activities{
		Store: n.Store, Chains: n.Chains, Logger: n.Logger, ConfirmPoll: cfg.ConfirmPoll, Metrics: n.anchorMetrics,
		Backoff: anchorSchedule(cfg), Log: seq,
	}
	n.watcher = &anchor.Watcher{Activities: acts, Temporal: n.Client, Namespace: cmp.Or(namespace, client.DefaultNamespace), WorkflowID: workflows.WorkflowID}
	acts.Watcher = n.watcher
	n.watcher.Start()
	n.worker = anchor.NewWorker(n.Client, acts, n.workerOptions(cfg.ActivityWorkers))
	if err := n.worker.Start(); err != nil {
		n.watcher.Stop()
		return fmt.Errorf("start worker: %w", err)
	}
	return nil
}

// anchorHTTP serves the evidence routes on the API, draining with it and
// counting its refusals in the API's keeper_busy_rejections_total, and
// registers the intake metrics and the anchoring gauges the API reports.
func (n *Node) anchorHTTP() *anchor.HTTP {
	cfg := n.Cfg
	intake := anchor.NewIntakeMetrics(cfg.Chains...)
	n.registry.MustRegister(intake.Collectors()...)
	n.registry.MustRegister(anchor.NewCollector(n.Store, cfg.Chains))
	return &anchor.HTTP{
		Store: n.Store, Chains: cfg.Chains, MaxPending: cfg.MaxPending, MaxBacklog: cfg.MaxBacklog, IntakeWait: cfg.IntakeWait,
		MaxBodyBytes: cfg.MaxBodyBytes, MaxBatchBodyBytes: cfg.MaxBatchBodyBytes, Interval: cfg.AnchorIntervalFor,
		Logger: n.Logger, Traces: n.traces, Metrics: intake,
		Draining: n.api.Draining, Busy: func() { n.api.CountBusy("evidence") },
	}
}

// runAnchorDispatch runs, until ctx is done, the dispatcher that forms
// batches and starts their workflows, with its cadence metrics, and, when
// KEEPER_EVIDENCE_RETENTION is set, retention.
func (n *Node) runAnchorDispatch(ctx context.Context) {
	cfg := n.Cfg
	cadence := anchor.NewCadence(cfg.AnchorIntervalFor, cfg.Chains)
	n.registry.MustRegister(cadence.Collectors()...)
	d := &anchor.Dispatcher{
		Store: n.Store, Temporal: n.Client, MaxItems: cfg.BatchMaxItems, MaxWait: cfg.BatchMaxWait, MinGap: cfg.BatchMinGap, MaxQueued: cfg.MaxQueued,
		Interval: cfg.AnchorIntervalFor, Cadence: cadence,
		Sweep: cfg.PollInterval, Policy: Policy(cfg), Logger: n.Logger, NoEagerStart: Versioning(cfg).On(), Traces: n.traces,
		OnStart: func(b store.Batch) { n.anchorMetrics.BatchStarted(b.Chain, b.Size) },
	}
	n.wg.Go(func() { d.Run(ctx) })
	if cfg.EvidenceRetention > 0 {
		archived := anchor.NewArchivedCounter()
		n.registry.MustRegister(archived)
		ar := &anchor.Archiver{Store: n.Store, Dir: cfg.ArchiveDirOrDefault(), Retention: cfg.EvidenceRetention, Logger: n.Logger, Archived: archived}
		n.wg.Go(func() { ar.Run(ctx) })
	}
}

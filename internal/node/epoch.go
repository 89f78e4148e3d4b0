package node

import (
	"net/http"
	"sort"
	"sync"

	"github.com/keeperhq/keeper/internal/config"
	"github.com/keeperhq/keeper/internal/epoch"
	"github.com/keeperhq/keeper/internal/settlement"
	"github.com/keeperhq/keeper/internal/telemetry"
)

// builtinLedgerURL names the built-in ledger to the in-process client; no
// request ever leaves the process.
const builtinLedgerURL = "http://keeper-builtin-ledger"

// EpochOptions are the API's reward-epoch settings from the configuration.
func EpochOptions(cfg config.Config) epoch.Options {
	return epoch.Options{MaxInFlight: cfg.Epochs.MaxInFlight, Duration: cfg.Epochs.Duration, Heartbeat: cfg.Epochs.Heartbeat, AcceptTimeout: cfg.Epochs.AcceptTimeout}
}

// builtinLedger is keeper's own ledger when no KEEPER_LEDGER_URL is set.
func (n *Node) builtinLedger() *settlement.Server {
	if n.Cfg.Epochs.LedgerURL != "" {
		return nil
	}
	return &settlement.Server{Store: n.Store}
}

// epochHTTP serves the reward-epoch routes on the API (and the built-in
// ledger's, when keeper runs it) and registers the epoch metrics the API
// reports: compute drains with the API and counts its refusals in the
// API's keeper_busy_rejections_total.
func (n *Node) epochHTTP() *epoch.HTTP {
	cfg := n.Cfg
	n.registry.MustRegister(epoch.NewCollector(n.Store))
	return &epoch.HTTP{
		Store: n.Store, Temporal: n.Client, Options: EpochOptions(cfg), Ledger: n.builtinLedger(),
		Outbound: cfg.Outbound(), MaxBodyBytes: cfg.MaxBodyBytes, Logger: n.Logger,
		Draining: n.api.Draining, Busy: func() { n.api.CountBusy("compute") },
	}
}

// epochActivities builds the reward-epoch activities: intents go to the
// configured ledger, or in-process to the built-in one; usage is fetched
// with connect and header timeouts of KEEPER_UPSTREAM_TIMEOUT_MS.
func (n *Node) epochActivities() *epoch.Activities {
	cfg := n.Cfg
	timeout := cfg.Epochs.UpstreamTimeout
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.ResponseHeaderTimeout = timeout
	transport.TLSHandshakeTimeout = timeout
	transport.MaxIdleConnsPerHost = 32
	hc := &http.Client{Transport: transport}
	// Sources are URLs callers hand keeper: the outbound policy applies to
	// them (the ledger is the operator's own, on whatever network it is).
	// Each fetch is a client span under its activity, so under the request
	// that started the epoch.
	sources := cfg.Outbound().Client(transport)
	sources.Transport = telemetry.Outgoing("epoch source", sources.Transport)
	lc := &settlement.Client{BaseURL: cfg.Epochs.LedgerURL, HTTP: hc}
	if b := n.builtinLedger(); b != nil {
		lc = &settlement.Client{BaseURL: builtinLedgerURL, HTTP: settlement.InProcess(b.Handler())}
	}
	chainList := append([]string(nil), cfg.Chains...)
	sort.Strings(chainList)
	return &epoch.Activities{
		Store: n.Store, ArtifactDir: cfg.ArtifactDirOrDefault(), Ledger: lc, HTTP: sources, Chains: chainList,
		CallTimeout: timeout, Metrics: n.upstream, Logger: n.Logger,
	}
}

// stopWorkers stops every worker of the node together; each lets its
// in-flight activities finish for up to the drain timeout.
func (n *Node) stopWorkers() {
	var wg sync.WaitGroup
	for _, w := range []interface{ Stop() }{n.worker, n.epochWorker, n.backfillWorker, n.webhookWorker} {
		if w == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.Stop()
		}()
	}
	wg.Wait()
	if n.watcher != nil {
		n.watcher.Stop()
	}
}

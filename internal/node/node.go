// Package node wires keeper's parts into a running node: the store, the chain
// adapters, the Temporal client, and whichever of the API (with its
// dispatcher) and the worker the command asked for. `keeper dev`, `keeper
// api`, `keeper worker` and the end-to-end tests all start nodes through it.
package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/keeperhq/keeper/internal/anchor"
	"github.com/keeperhq/keeper/internal/chains"
	"github.com/keeperhq/keeper/internal/codec"
	"github.com/keeperhq/keeper/internal/config"
	"github.com/keeperhq/keeper/internal/epoch"
	"github.com/keeperhq/keeper/internal/httpapi"
	"github.com/keeperhq/keeper/internal/logsvc"
	"github.com/keeperhq/keeper/internal/redact"
	"github.com/keeperhq/keeper/internal/starter"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/telemetry"
	"github.com/keeperhq/keeper/internal/webhook"
	"github.com/keeperhq/keeper/internal/worker"
)

// Roles says which parts a node runs.
type Roles struct {
	API    bool // HTTP API and dispatcher
	Worker bool // Temporal worker
}

// Node is one running keeper process (or, in tests, one of several in a
// process).
type Node struct {
	Cfg    config.Config
	Roles  Roles
	Store  *store.Store
	Client client.Client
	Chains map[string]chains.Adapter
	Logger *slog.Logger

	ownChains bool // the node made Chains (NewChains), so it closes them

	api        *starter.API
	http       *http.Server
	listener   net.Listener
	worker     sdkworker.Worker
	watcher    *anchor.Watcher                   // completes ConfirmAnchor attempts (with worker)
	sequencer  atomic.Pointer[logsvc.Sequencer]  // appends to the evidence log and signs it (with worker)
	witnessing atomic.Pointer[logsvc.Witnessing] // submits its checkpoints to the witnesses (with worker and KEEPER_LOG_WITNESSES)
	runCtx     context.Context                   // the dispatcher's and the background loops'; Shutdown and Kill end it
	cancel     context.CancelFunc
	wg         sync.WaitGroup
	stopOnce   sync.Once

	// Supervision (supervise.go): a Temporal worker stopped for good, and
	// the node's failure, which ends its process.
	workerErr atomic.Pointer[error]
	failed    chan struct{}
	failErr   error
	failOnce  sync.Once

	sharedStore bool

	epochWorker sdkworker.Worker

	// Observability: the node's one metrics registry (see metrics.go), the
	// Temporal SDK's metrics handler, and tracing when it is on.
	registry              *prometheus.Registry
	upstream              *epoch.UpstreamMetrics
	anchorMetrics         *anchor.Metrics
	webhookMetrics        *webhook.Metrics
	witnessMetrics        *witnessMetrics
	balances              *signerBalances // the signers' balances (with worker: balance.go)
	temporalMetrics       client.MetricsHandler
	temporalMetricsCloser io.Closer
	metricsHTTP           *http.Server
	metricsAddr           string
	healthHTTP            *http.Server // KEEPER_HEALTH_ADDR's (config.HealthAddrFor)
	healthAddr            string
	workersUp             atomic.Bool // every Temporal worker of the node started, and not stopping
	draining              atomic.Bool
	traces                *telemetry.Traces
	ownTracer             *sdktrace.TracerProvider // made from OTEL_* here: flushed at Shutdown

	// backfillWorker runs WalletSync and Backfill (nil without a backfill network).
	backfillWorker sdkworker.Worker
	// webhookWorker runs DeliverWebhook.
	webhookWorker sdkworker.Worker

	codec *codec.Codec // nil: payloads are plain
}

// StoreFile is keeper's record store inside the data directory.
func StoreFile(dataDir string) string { return filepath.Join(dataDir, "keeper.db") }

// OpenStore opens the record store the configuration names: the PostgreSQL
// database of KEEPER_STORE_URL, shared with every node given the same URL,
// or else keeper.db in the data directory.
func OpenStore(ctx context.Context, cfg config.Config) (*store.Store, error) {
	if cfg.StoreURL != "" {
		return store.OpenPostgres(ctx, cfg.StoreURL)
	}
	return store.Open(ctx, StoreFile(cfg.DataDir))
}

// Options builds a node. Chains, when nil, are made from the configuration.
type Options struct {
	Config        config.Config
	Roles         Roles
	ClientOptions client.Options
	Chains        map[string]chains.Adapter
	// ExtraChains make the adapters of chain names that are not production
	// chains (KEEPER_CHAINS=stub), when Chains is nil.
	ExtraChains map[string]ChainMaker
	Logger      *slog.Logger
	// Store, when set, is used instead of opening the data directory's store,
	// and is not closed by the node (tests share one between nodes).
	Store *store.Store
	// TracerProvider, when set, traces the node; nil: the OTEL_* environment
	// decides (off unless an OTLP endpoint is set).
	TracerProvider trace.TracerProvider
}

// Start opens the store, connects to Temporal and starts the node's roles.
// The HTTP API listens before Start returns.
func Start(ctx context.Context, o Options) (*Node, error) {
	cfg := o.Config
	n := &Node{Cfg: cfg, Roles: o.Roles, Chains: o.Chains, Logger: o.Logger, failed: make(chan struct{}), ownChains: o.Chains == nil}
	co, err := n.withCodec(o.ClientOptions)
	if err != nil {
		return nil, err
	}
	if n.Chains == nil {
		if n.Chains, err = NewChains(ctx, cfg, o.ExtraChains, o.Logger); err != nil {
			return nil, err
		}
	}
	n.Store, n.sharedStore = o.Store, o.Store != nil
	if n.Store == nil {
		if n.Store, err = OpenStore(ctx, cfg); err != nil {
			return nil, err
		}
		if cfg.StoreURL != "" {
			n.Logger.Info("keeper's records are in PostgreSQL", "store", redact.URL(cfg.StoreURL))
		}
	}
	n.registerMetrics()
	if co.Logger == nil {
		co.Logger = sdklog.NewStructuredLogger(o.Logger.With("component", "temporal-sdk"))
	}
	if co.MetricsHandler == nil {
		co.MetricsHandler = n.temporalMetrics
	}
	if err := n.startTracing(ctx, o.TracerProvider, &co); err != nil {
		n.close()
		return nil, err
	}
	// A lazy client: intake must work while Temporal is down; the dispatcher
	// and worker retry until it is back.
	if n.Client, err = client.NewLazyClient(co); err != nil {
		n.close()
		return nil, fmt.Errorf("temporal client: %w", err)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	n.runCtx, n.cancel = runCtx, cancel
	if err := n.startMetricsListener(); err != nil {
		n.close()
		return nil, err
	}
	if err := n.startHealthListener(); err != nil {
		n.close()
		return nil, err
	}

	if o.Roles.Worker {
		if err := n.startWorkers(ctx, runCtx, co.Namespace); err != nil {
			n.close()
			return nil, err
		}
	}
	if o.Roles.API {
		if err := n.startAPI(runCtx); err != nil {
			n.close()
			return nil, err
		}
	}
	return n, nil
}

// startWorkers starts a worker node's parts: the signers' balances, the
// evidence log's sequencer, the confirmation watcher and the anchor, epoch,
// backfill and webhook workers. On an error it stops what it started but
// the node itself, which its caller closes.
func (n *Node) startWorkers(ctx, runCtx context.Context, namespace string) error {
	cfg := n.Cfg
	if err := worker.EnsureSearchAttributes(ctx, n.Client, namespace, n.Logger); err != nil {
		n.Logger.Warn("search attributes not verified", "error", err)
	}
	// The signers' balances: read once now (bounded, so a chain that does
	// not answer delays the start by balanceStartTimeout at most), then
	// after confirmed batches only (docs/chains.md, Polling budget).
	n.balances.readAll(ctx, balanceStartTimeout)
	n.anchorMetrics.OnConfirmed = n.balances.Confirmed
	n.wg.Go(func() { n.balances.run(runCtx, balanceEvery) })
	seq, err := n.startLog(runCtx)
	if err != nil {
		return err
	}
	n.sequencer.Store(seq)
	if err := n.startAnchorWorker(seq, namespace); err != nil {
		return err
	}
	n.epochWorker = epoch.NewWorker(n.Client, n.epochActivities(), n.workerOptions(cfg.ActivityWorkers))
	if err := n.epochWorker.Start(); err != nil {
		n.worker.Stop()
		return fmt.Errorf("start epoch worker: %w", err)
	}
	if err := n.startBackfillWorker(ctx, runCtx); err != nil {
		n.stopWorkers()
		return err
	}
	if err := n.startWebhookWorker(); err != nil {
		n.stopWorkers()
		return err
	}
	n.startVersioning(runCtx)
	n.workersUp.Store(true)
	return nil
}

func (n *Node) startAPI(ctx context.Context) error {
	cfg := n.Cfg
	checks := n.readinessChecks()
	token, err := cfg.Token()
	if err != nil {
		return err
	}
	n.api = &starter.API{
		Store: n.Store, Checks: checks, Logger: n.Logger, MaxInFlight: cfg.MaxInFlight,
		Auth: starter.AuthOptions{Token: token, MetricsOpen: cfg.MetricsOpen}, Draining: &httpapi.Drain{},
		Codec: n.codecAPI(), Registry: n.registry, Traces: n.traces, VerifyNetworks: verifyNetworks(cfg),
		LongRequestTimeout: cfg.HTTP.LongRequest,
	}
	n.api.Features = append(n.api.Features, n.anchorHTTP())
	n.api.Features = append(n.api.Features, n.webhookHTTP())
	n.api.Features = append(n.api.Features, n.epochHTTP())
	wallets, backfills := n.backfillHTTP()
	n.api.Features = append(n.api.Features, wallets)
	if ws, _, _ := cfg.LogWitnesses(); len(ws) > 0 {
		n.api.Features = append(n.api.Features, witnessFeature{n})
		n.api.Log = &logsvc.Server{Source: n.Store, Logger: n.Logger, Witnessed: true}
	}
	ln, err := listen("KEEPER_HTTP_ADDR", cfg.HTTPAddr)
	if err != nil {
		return err
	}
	n.listener = ln
	if token == "" && !isLoopback(ln.Addr()) {
		n.Logger.Warn("the API listens beyond loopback without a token: anyone who can reach " + ln.Addr().String() + " can submit and read evidence; set KEEPER_API_TOKEN")
	}
	n.http = apiServer(cfg.HTTP, n.api.Handler())
	n.serve("KEEPER_HTTP_ADDR", n.http, ln)
	n.runAnchorDispatch(ctx)
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		n.webhookDispatcher().Run(ctx)
	}()
	if backfills != nil {
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			backfills.Run(ctx)
		}()
	}
	return nil
}

func isLoopback(a net.Addr) bool {
	tcp, ok := a.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}

// APIAddr is where the HTTP API listens ("" when this node has no API).
func (n *Node) APIAddr() string {
	if n.listener == nil {
		return ""
	}
	return n.listener.Addr().String()
}

// Shutdown stops the node gracefully: readiness goes false and intake answers
// 503, the dispatcher stops, the worker lets in-flight activities finish for up
// to the drain timeout, then the HTTP server and the store close. Evidence
// already accepted stays in the store and continues on the next start.
func (n *Node) Shutdown(ctx context.Context) error {
	var err error
	n.stopOnce.Do(func() {
		n.draining.Store(true)
		n.workersUp.Store(false)
		if n.api != nil {
			n.api.Drain()
		}
		n.cancel() // dispatcher
		// Each worker lets in-flight activities finish for up to WorkerStopTimeout.
		n.stopWorkers()
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		for _, srv := range []*http.Server{n.http, n.metricsHTTP, n.healthHTTP} {
			if srv == nil {
				continue
			}
			if serr := srv.Shutdown(sctx); serr != nil {
				// net/http counts a connection that has not sent its first
				// request as busy for its first 5 s (a client's pool dials
				// ahead), so a wait this long can end with nothing in flight:
				// close what is left rather than fail the shutdown.
				n.Logger.Warn("http: closing the connections still open after the shutdown wait", "addr", srv.Addr, "error", serr)
				err = errors.Join(err, srv.Close())
			}
		}
		cancel()
		n.wg.Wait()
		err = errors.Join(err, n.close())
		if n.ownTracer != nil {
			// Flush the last spans (the drain's) to the collector.
			err = errors.Join(err, n.ownTracer.Shutdown(ctx))
		}
	})
	return err
}

// Kill stops the node abruptly, as a crash would: no drain, in-flight
// activities are abandoned mid-way. Tests use it.
func (n *Node) Kill() {
	n.stopOnce.Do(func() {
		n.cancel()
		if n.watcher != nil {
			n.watcher.Stop() // a killed worker's waits lapse and are adopted
		}
		if n.http != nil {
			n.http.Close()
		}
		if n.metricsHTTP != nil {
			n.metricsHTTP.Close()
		}
		if n.healthHTTP != nil {
			n.healthHTTP.Close()
		}
		if n.worker != nil {
			go n.worker.Stop()
		}
		if n.epochWorker != nil {
			go n.epochWorker.Stop()
		}
		if n.backfillWorker != nil {
			go n.backfillWorker.Stop()
		}
		if n.webhookWorker != nil {
			go n.webhookWorker.Stop()
		}
		n.wg.Wait()
		n.Client.Close()
		n.temporalMetricsCloser.Close()
	})
}

func (n *Node) close() error {
	if n.cancel != nil {
		n.cancel()
	}
	for _, srv := range []*http.Server{n.metricsHTTP, n.healthHTTP} {
		if srv != nil {
			srv.Close() // a start that failed half-way
		}
	}
	if n.Client != nil {
		n.Client.Close()
	}
	if n.temporalMetricsCloser != nil {
		n.temporalMetricsCloser.Close()
	}
	if n.ownChains {
		closeChains(n.Chains)
	}
	if n.sharedStore {
		return nil
	}
	return n.Store.Close()
}

// apiServer is the API's HTTP server with the configured timeouts; the
// routes that may move megabytes set longer deadlines of their own
// (KEEPER_HTTP_LONG_TIMEOUT).
func apiServer(t config.HTTPConfig, h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: min(5*time.Second, t.ReadTimeout),
		ReadTimeout:       t.ReadTimeout,
		WriteTimeout:      t.WriteTimeout,
		IdleTimeout:       t.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
	}
}

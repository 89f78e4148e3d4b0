package bench

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/keeperhq/keeper/internal/config"
	"github.com/keeperhq/keeper/internal/dev/devchain"
	"github.com/keeperhq/keeper/internal/dev/localnet"
	"github.com/keeperhq/keeper/internal/dev/localwitness"
	"github.com/keeperhq/keeper/internal/dev/stub"
	"github.com/keeperhq/keeper/internal/devserver"
	"github.com/keeperhq/keeper/internal/node"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/worker"
)

// stack is one running keeper deployment the phases measure. A
// single-process stack (startStack) holds, in this process and one
// directory, the embedded Temporal server, the local chains (those without
// an RPC URL) and a node running the API, the dispatcher and the worker; a
// multi-process one (startMulti) runs them as child processes.
type stack struct {
	cfg config.Config

	// What the phases use, whatever the deployment.
	store      records         // keeper's records, as the nodes see them
	client     client.Client   // reads the workflows' histories
	apis       []string        // host:port of every API node: the load is spread over them
	local      map[string]bool // chains the stack runs itself
	heartbeats func() int64    // activity heartbeats that have reached the server
	procs      []*child        // multi-process: keeper's processes
	postgres   bool            // the store or Temporal is on a PostgreSQL server of this machine, whose CPU counts
	cleanup    []func()        // run by stop, last first (dropping fresh databases)
	rawDB      *sql.DB         // the store read directly, for the log's figures (logDB)

	// Single-process only.
	srv  *devserver.Server
	net  *localnet.Net
	wit  *localwitness.Witnesses // --witnesses N
	node *node.Node
	rpcs *rpcCounter
}

// records is the store as the phases read it: the evidence each took in,
// how it settled and how long it took, the log's size and the store's
// (*store.Store).
type records interface {
	LastSeq(ctx context.Context) (int64, error)
	Unsettled(ctx context.Context, after, upto int64) (bool, error)
	EvidenceTimings(ctx context.Context, after, upto int64) ([]store.EvidenceTiming, error)
	BatchTimings(ctx context.Context, after, upto int64) ([]store.BatchTiming, error)
	LogSize(ctx context.Context) (uint64, error)
	LogIndexes(ctx context.Context, after, upto int64) (map[int64]int64, error)
	LatestCheckpoint(ctx context.Context) (store.LogCheckpoint, error)
	Size(ctx context.Context) (int64, error)
}

// startStack starts a single-process stack on dir. Every port is picked
// free, so a bench never collides with a running `keeper dev`.
func startStack(ctx context.Context, cfg config.Config, dir string, log *slog.Logger) (*stack, error) {
	cfg.DataDir = dir
	cfg.HTTPAddr = "127.0.0.1:0"
	cfg.Dev.EVMPort, cfg.Dev.SolanaPort = 0, 0
	s := &stack{rpcs: newRPCCounter()}
	var err error
	s.srv, err = devserver.Start(ctx, devserver.Options{
		DataDir: dir, DB: cfg.Dev.TemporalDB, Namespace: "default", SearchAttributes: worker.SearchAttributes,
		Logger: log.With("component", "temporal-server"),
	})
	if err != nil {
		return nil, fmt.Errorf("bench: embedded Temporal server: %w", err)
	}
	if s.net, err = localnet.StartFor(ctx, &cfg, log.With("component", "local-chains")); err != nil {
		s.stop()
		return nil, fmt.Errorf("bench: local chains: %w", err)
	}
	if s.wit, err = localwitness.StartFor(ctx, &cfg, log.With("component", "local-witnesses")); err != nil {
		s.stop()
		return nil, fmt.Errorf("bench: local witnesses: %w", err)
	}
	s.node, err = node.Start(ctx, node.Options{
		Config: cfg, Roles: node.Roles{API: true, Worker: true}, Logger: log,
		ExtraChains:   map[string]node.ChainMaker{stub.Name: stub.Make},
		ClientOptions: client.Options{HostPort: s.srv.FrontendAddr(), Namespace: s.srv.Namespace(), MetricsHandler: s.rpcs.handler()},
	})
	if err != nil {
		s.stop()
		return nil, fmt.Errorf("bench: keeper node: %w", err)
	}
	s.cfg = cfg
	s.store, s.client, s.apis = s.node.Store, s.node.Client, []string{s.node.APIAddr()}
	s.local = map[string]bool{stub.Name: true}
	if s.net != nil {
		s.local["etherlink"], s.local["solana"] = s.net.EVM != nil, s.net.Solana != nil
	}
	s.heartbeats = func() int64 { return s.rpcs.get("RecordActivityTaskHeartbeat") }
	s.postgres = localPostgres(cfg.StoreURL) || localPostgres(cfg.Dev.TemporalDB)
	return s, nil
}

// stop drains the node (or stops the processes) and stops the chains and
// the server, then runs the cleanups.
func (s *stack) stop() {
	if s.node != nil {
		ctx, cancel := context.WithTimeout(context.Background(), s.node.Cfg.DrainTimeout+10*time.Second)
		s.node.Shutdown(ctx)
		cancel()
	}
	if s.net != nil {
		s.net.Stop()
	}
	if s.wit != nil {
		s.wit.Stop()
	}
	if s.srv != nil {
		s.srv.Stop()
	}
	stopChildren(s.procs, s.cfg.DrainTimeout+10*time.Second)
	for i := len(s.cleanup) - 1; i >= 0; i-- {
		s.cleanup[i]()
	}
}

// ChainInfo is how fast a chain makes blocks and how deep an anchor must be
// to count as final.
type ChainInfo struct {
	Name          string  `json:"name"`
	Local         bool    `json:"local"`
	BlockTimeMS   float64 `json:"block_time_ms"`
	FinalityDepth int     `json:"finality_depth"`
	FinalityMS    float64 `json:"finality_ms"` // block time × depth
}

// chainInfo describes the configured chains' finality; local says which
// the stack runs itself.
func chainInfo(cfg config.Config, local map[string]bool) []ChainInfo {
	var out []ChainInfo
	for _, name := range cfg.Chains {
		ci := ChainInfo{Name: name, Local: local[name]}
		switch name {
		case "etherlink":
			ci.BlockTimeMS = msOf(cfg.Dev.EVMBlockTime)
			if local[name] {
				// The local chain's timestamps follow the wall clock: at most
				// about a block a second (docs/chains.md).
				ci.BlockTimeMS = max(ci.BlockTimeMS, 1000)
			}
			ci.FinalityDepth = devchain.DefaultFinalityDepth
			if cfg.EVM.Confirmations > 0 {
				ci.FinalityDepth = cfg.EVM.Confirmations
			}
		case "solana":
			ci.BlockTimeMS = msOf(cfg.Dev.SolanaSlotTime)
			ci.FinalityDepth = 32 // the devnet finalizes a slot 32 slots later
			if cfg.Solana.Commitment == "confirmed" {
				ci.FinalityDepth = 1
			}
		case "stub":
			ci.BlockTimeMS = msOf(cfg.StubConfirmDelay)
			ci.FinalityDepth = 1
		}
		ci.FinalityMS = ci.BlockTimeMS * float64(ci.FinalityDepth)
		out = append(out, ci)
	}
	return out
}

package node

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/client"

	"github.com/keeperhq/keeper/internal/anchor"
	"github.com/keeperhq/keeper/internal/epoch"
	"github.com/keeperhq/keeper/internal/telemetry"
	"github.com/keeperhq/keeper/internal/webhook"
)

// registerMetrics builds the node's one Prometheus registry. Every metric
// keeper exports is registered here, but for the API's own (requests, and
// the gauges it reads from the store), which the API adds to this registry
// when it starts; the Temporal SDK's come through its metrics handler.
func (n *Node) registerMetrics() {
	n.registry = prometheus.NewRegistry()
	n.upstream = epoch.NewUpstreamMetrics()
	n.anchorMetrics = anchor.NewMetrics(n.Cfg.Chains...)
	n.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	n.registry.MustRegister(n.upstream.Collectors()...)
	n.registry.MustRegister(n.anchorMetrics.Collectors()...)
	n.webhookMetrics = webhook.NewMetrics()
	n.registry.MustRegister(n.webhookMetrics.Collectors()...)
	n.witnessMetrics = newWitnessMetrics()
	n.registry.MustRegister(n.witnessMetrics.collectors(n)...)
	names := make([]string, 0, len(n.Chains))
	for name := range n.Chains {
		names = append(names, name)
	}
	sort.Strings(names)
	var rpcs rpcEndpointCollector
	for _, name := range names {
		if sc, ok := n.Chains[name].(interface{ StatusCalls() int64 }); ok {
			n.registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
				Name:        "keeper_chain_status_calls_total",
				Help:        "Batched status calls this process made to a chain's endpoint (one call covers up to 256 transactions: docs/anchoring.md).",
				ConstLabels: prometheus.Labels{"chain": name},
			}, func() float64 { return float64(sc.StatusCalls()) }))
		}
		if g, ok := n.Chains[name].(interface {
			NonceGapRebroadcasts() int64
			Stopped() error
		}); ok {
			n.registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
				Name:        "keeper_chain_nonce_gap_rebroadcasts_total",
				Help:        "Journaled transactions rebroadcast to fill a gap in the signer's nonces (docs/anchoring.md, Nonce gaps).",
				ConstLabels: prometheus.Labels{"chain": name},
			}, func() float64 { return float64(g.NonceGapRebroadcasts()) }))
			n.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name:        "keeper_chain_signer_stopped",
				Help:        "1 when the chain's signer was stopped because its key signed a transaction keeper did not (docs/anchoring.md, Nonce gaps).",
				ConstLabels: prometheus.Labels{"chain": name},
			}, func() float64 {
				if g.Stopped() != nil {
					return 1
				}
				return 0
			}))
		}
		if pf, ok := n.Chains[name].(interface{ PriorityFee() uint64 }); ok {
			n.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name:        "keeper_chain_compute_unit_price_microlamports",
				Help:        "Compute unit price (priority fee, micro-lamports per compute unit) of the last anchor signed: the recent fees' 75th percentile, the floor, a re-sign bump, capped (docs/chains.md, Solana priority fees).",
				ConstLabels: prometheus.Labels{"chain": name},
			}, func() float64 { return float64(pf.PriorityFee()) }))
		}
		if f, ok := n.Chains[name].(finalityReporter); ok {
			n.registry.MustRegister(finalityStalledGauge(name, f))
		}
		switch name {
		case "etherlink":
			rpcs.chains = append(rpcs.chains, rpcChain{name, EVMRPC(n.Cfg), "blocks"})
		case "solana":
			rpcs.chains = append(rpcs.chains, rpcChain{name, SolanaRPC(n.Cfg), "slots"})
		}
	}
	n.registry.MustRegister(rpcs)
	n.balances = newSignerBalances(n.Chains, n.Logger)
	n.registry.MustRegister(n.balances)
	n.temporalMetrics, n.temporalMetricsCloser = telemetry.TemporalMetrics(n.registry, n.Logger)
}

// finalityReporter is a chain adapter that watches its node's `finalized`
// block (chains/evm: a finalized block that stops while latest moves).
type finalityReporter interface{ FinalityStalled() error }

// finalityStalledGauge is keeper_chain_finalized_stalled for one chain.
func finalityStalledGauge(chain string, f finalityReporter) prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name:        "keeper_chain_finalized_stalled",
		Help:        "1 while the chain node's finalized block has not moved for KEEPER_EVM_FINALITY_STALL_MS although its latest block has: anchors cannot become final (docs/chains.md, EtherLink networks).",
		ConstLabels: prometheus.Labels{"chain": chain},
	}, func() float64 {
		if f.FinalityStalled() != nil {
			return 1
		}
		return 0
	})
}

// MetricsHandler serves the node's metrics in Prometheus text format.
func (n *Node) MetricsHandler() http.Handler {
	return promhttp.HandlerFor(n.registry, promhttp.HandlerOpts{})
}

// startMetricsListener serves /metrics, /health and /readyz on
// KEEPER_METRICS_ADDR, to keep scrapes off the API's address.
func (n *Node) startMetricsListener() error {
	if n.Cfg.MetricsAddr == "" {
		return nil
	}
	mux, err := n.opsMux()
	if err != nil {
		return err
	}
	ln, err := listen("KEEPER_METRICS_ADDR", n.Cfg.MetricsAddr)
	if err != nil {
		return err
	}
	n.metricsHTTP = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, WriteTimeout: 30 * time.Second}
	n.metricsAddr = ln.Addr().String()
	n.serve("KEEPER_METRICS_ADDR", n.metricsHTTP, ln)
	return nil
}

// MetricsAddr is where KEEPER_METRICS_ADDR's listener serves ("" when off).
func (n *Node) MetricsAddr() string { return n.metricsAddr }

// startTracing traces the node with tp, or with the provider the OTEL_*
// environment asks for: the API's requests, the dispatcher's workflow
// starts, and (through the SDK's interceptor on the client, which its
// workers inherit) workflows and activities.
func (n *Node) startTracing(ctx context.Context, tp trace.TracerProvider, co *client.Options) error {
	if tp == nil {
		own, err := telemetry.TracerProviderFromEnv(ctx)
		if err != nil || own == nil {
			return err
		}
		n.ownTracer, tp = own, own
		n.Logger.Info("tracing on: spans go to the OTLP endpoint of the OTEL_* environment")
	}
	ti, err := telemetry.TemporalTracing(tp)
	if err != nil {
		return fmt.Errorf("make the Temporal tracing interceptor: %w", err)
	}
	co.Interceptors = append(co.Interceptors, ti)
	n.traces = telemetry.NewTraces(tp)
	return nil
}

package node

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/keeperhq/keeper/internal/chains/rpcpool"
)

// rpcEndpointCollector exports each JSON-RPC provider of the chains
// (chains/rpcpool): health, head lag, requests, errors, 429s and the time
// requests waited for the rate limit. Pools are looked up at every scrape:
// the adapters create them when they start.
type rpcEndpointCollector struct {
	chains []rpcChain
}

type rpcChain struct {
	chain, primary string
	unit           string // what its head counts: "blocks" (EVM) or "slots" (Solana)
}

var (
	rpcLabels      = []string{"chain", "endpoint", "host"}
	rpcHealthyDesc = prometheus.NewDesc("keeper_rpc_endpoint_healthy", "1 while the JSON-RPC provider answers and its head is within KEEPER_<CHAIN>_RPC_MAX_LAG of the best provider's (always 1 with one provider unless it fails).", rpcLabels, nil)
	// The head lag is counted in the chain's own unit, one metric per unit.
	rpcLagDescs = map[string]*prometheus.Desc{
		"blocks": prometheus.NewDesc("keeper_rpc_endpoint_head_lag_blocks", "Blocks the provider's head was behind the best provider's at the last probe (EVM chains).", rpcLabels, nil),
		"slots":  prometheus.NewDesc("keeper_rpc_endpoint_head_lag_slots", "Slots the provider's head was behind the best provider's at the last probe (Solana).", rpcLabels, nil),
	}
	rpcTrustedDesc    = prometheus.NewDesc("keeper_rpc_endpoint_trusted", "1 when the provider's receipts count towards confirming an anchor (KEEPER_<CHAIN>_RPC_TRUST).", rpcLabels, nil)
	rpcRequestsDesc   = prometheus.NewDesc("keeper_rpc_endpoint_requests_total", "HTTP requests sent to the provider.", rpcLabels, nil)
	rpcErrorsDesc     = prometheus.NewDesc("keeper_rpc_endpoint_errors_total", "Requests and head probes the provider failed (transport error, timeout, HTTP status other than 200).", rpcLabels, nil)
	rpcThrottledDesc  = prometheus.NewDesc("keeper_rpc_endpoint_throttled_total", "429 answers from the provider.", rpcLabels, nil)
	rpcRateWaitDesc   = prometheus.NewDesc("keeper_rpc_endpoint_rate_wait_seconds_total", "Time requests to the provider were held back by KEEPER_<CHAIN>_RPC_RATE or a 429's Retry-After.", rpcLabels, nil)
	rpcDisagreeDesc   = prometheus.NewDesc("keeper_rpc_receipt_disagreements_total", "Receipt or signature-status lookups the chain's trusted providers did not answer alike (kept as not found yet): a provider behind the others, or one inventing receipts.", []string{"chain"}, nil)
	rpcEndpointsDescs = []*prometheus.Desc{rpcHealthyDesc, rpcLagDescs["blocks"], rpcLagDescs["slots"], rpcTrustedDesc, rpcRequestsDesc, rpcErrorsDesc, rpcThrottledDesc, rpcRateWaitDesc, rpcDisagreeDesc}
)

func (c rpcEndpointCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range rpcEndpointsDescs {
		ch <- d
	}
}

func (c rpcEndpointCollector) Collect(ch chan<- prometheus.Metric) {
	for _, rc := range c.chains {
		collectPool(ch, rc.chain, rpcLagDescs[rc.unit], rpcpool.Lookup(rc.primary))
	}
}

func collectPool(ch chan<- prometheus.Metric, chain string, lagDesc *prometheus.Desc, p *rpcpool.Pool) {
	if p == nil {
		return
	}
	for _, s := range p.Stats() {
		labels := []string{chain, strconv.Itoa(s.Index), s.Endpoint}
		ch <- prometheus.MustNewConstMetric(rpcHealthyDesc, prometheus.GaugeValue, boolValue(s.Healthy), labels...)
		ch <- prometheus.MustNewConstMetric(lagDesc, prometheus.GaugeValue, float64(s.Lag), labels...)
		ch <- prometheus.MustNewConstMetric(rpcTrustedDesc, prometheus.GaugeValue, boolValue(s.Trusted), labels...)
		ch <- prometheus.MustNewConstMetric(rpcRequestsDesc, prometheus.CounterValue, float64(s.Requests), labels...)
		ch <- prometheus.MustNewConstMetric(rpcErrorsDesc, prometheus.CounterValue, float64(s.Errors), labels...)
		ch <- prometheus.MustNewConstMetric(rpcThrottledDesc, prometheus.CounterValue, float64(s.Throttled), labels...)
		ch <- prometheus.MustNewConstMetric(rpcRateWaitDesc, prometheus.CounterValue, s.RateWaited.Seconds(), labels...)
	}
	ch <- prometheus.MustNewConstMetric(rpcDisagreeDesc, prometheus.CounterValue, float64(p.Disagreements()), chain)
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

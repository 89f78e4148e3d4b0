// Package rpcpool spreads one chain's JSON-RPC traffic over several
// providers. Operators run two or more endpoints per chain: one goes down,
// one falls behind, one answers with things the chain does not hold.
//
// A Pool is an http.RoundTripper under the go-ethereum and solana-go clients,
// so every client of the chain (submitter, status poller, backfill scanner)
// uses it unchanged. It reads each request's JSON-RPC calls and:
//
//   - broadcasts a signed transaction (eth_sendRawTransaction,
//     sendTransaction) to every healthy endpoint and answers with the first
//     that took it;
//   - sends a receipt or signature-status lookup to every trusted healthy
//     endpoint and keeps a receipt only where all of them report the same
//     one (otherwise the lookup answers "not found yet"), so a provider that
//     invents a receipt cannot confirm an anchor on its own;
//   - sends every other call to the healthiest endpoint, in the configured
//     order, failing over to the next on a transport error, a timeout or an
//     HTTP status other than 200.
//
// Health comes from probes of each endpoint's head (eth_blockNumber,
// getSlot) at most every ProbeInterval, started by traffic: an endpoint is
// healthy while it answers and its head is within MaxLag of the best head;
// a failed request marks it unhealthy until a probe says otherwise.
// Requests to each endpoint are paced by chains/rpclimit.
//
// Pools are shared per process, found by their first URL (For, Register),
// as rpclimit's limiters are per endpoint; with one URL a pool only passes
// requests through and counts them.
package rpcpool

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/keeperhq/keeper/internal/chains/rpclimit"
	"github.com/keeperhq/keeper/internal/redact"
)

// Defaults applied to zero Options fields.
const (
	DefaultProbeInterval = 2 * time.Second
	DefaultTimeout       = 10 * time.Second
)

// Kind tells a pool how one chain's JSON-RPC reads a head, sends a
// transaction and reports inclusion.
type Kind struct {
	Name string
	// HeadMethod answers the endpoint's head as a number (eth_blockNumber's
	// hex quantity or getSlot's integer); called without parameters.
	HeadMethod string
	// Broadcast methods go to every healthy endpoint.
	Broadcast []string
	// Agree maps a lookup method to the rule that merges its results from
	// the trusted endpoints (one each, in order): merged is what the caller
	// gets (nil: null, "not found yet"); agreed false counts a disagreement.
	// A lookup any trusted endpoint answered with an error answers that error.
	Agree map[string]func(results []json.RawMessage) (merged json.RawMessage, agreed bool)
	// DefaultMaxLag is how far behind the best head (blocks, slots) a
	// healthy endpoint may be when Options.MaxLag is 0.
	DefaultMaxLag uint64
}

// Options configure a pool. URLs is required; zero values take defaults.
type Options struct {
	URLs []string
	// Rate caps requests a second to each endpoint (rpclimit); 0: no cap.
	Rate float64
	// Trust lists the endpoints (1-based positions in URLs) whose agreement
	// confirms a transaction; empty: every healthy endpoint.
	Trust []int
	// MaxLag: an endpoint whose head is further behind the best than this
	// is unhealthy; default Kind.DefaultMaxLag.
	MaxLag uint64
	// ProbeInterval between head probes while traffic flows; default 2 s.
	ProbeInterval time.Duration
	// Timeout bounds one request to one endpoint before the next is tried;
	// default 10 s.
	Timeout time.Duration
}

// Pool is one chain's endpoints. Its methods are safe for concurrent use.
type Pool struct {
	kind  Kind
	opts  Options
	eps   []*endpoint
	trust []*endpoint // nil: every healthy endpoint

	probing   atomic.Bool
	lastProbe atomic.Int64 // unix nanoseconds
	disagreed atomic.Int64
}

type endpoint struct {
	index   int // 1-based
	url     *url.URL
	label   string // redacted: scheme and host
	limiter *rpclimit.Limiter

	healthy  atomic.Bool
	answered atomic.Bool // the last probe got a head
	head     atomic.Uint64
	lag      atomic.Uint64
	requests atomic.Int64
	errors   atomic.Int64
}

// New checks opts and returns a pool; it probes every endpoint once
// (bounded by the timeout) so the first requests already avoid a dead one.
func New(kind Kind, opts Options) (*Pool, error) {
	if len(opts.URLs) == 0 {
		return nil, errors.New("rpcpool: no endpoint")
	}
	opts.MaxLag = cmp.Or(opts.MaxLag, kind.DefaultMaxLag)
	opts.ProbeInterval = cmp.Or(opts.ProbeInterval, DefaultProbeInterval)
	opts.Timeout = cmp.Or(opts.Timeout, DefaultTimeout)
	p := &Pool{kind: kind, opts: opts}
	seen := map[string]bool{}
	for i, raw := range opts.URLs {
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("rpcpool: endpoint %d (%s) must be an http(s) URL", i+1, redact.Endpoint(raw))
		}
		if seen[raw] {
			return nil, fmt.Errorf("rpcpool: endpoint %d (%s) is listed twice", i+1, redact.Endpoint(raw))
		}
		seen[raw] = true
		ep := &endpoint{index: i + 1, url: u, label: redact.Endpoint(raw), limiter: rpclimit.For(raw, opts.Rate)}
		ep.healthy.Store(true)
		ep.answered.Store(true)
		p.eps = append(p.eps, ep)
	}
	for _, n := range opts.Trust {
		if n < 1 || n > len(p.eps) {
			return nil, fmt.Errorf("rpcpool: trusted endpoint %d is not in the list of %d", n, len(p.eps))
		}
		p.trust = append(p.trust, p.eps[n-1])
	}
	if len(p.eps) > 1 {
		p.probe()
	}
	return p, nil
}

var (
	regMu    sync.Mutex
	registry = map[string]*Pool{}
)

// Register makes p the pool of its first URL for every later For.
func Register(p *Pool) {
	regMu.Lock()
	defer regMu.Unlock()
	registry[p.opts.URLs[0]] = p
}

// For returns the pool registered for primary, or registers a pool of that
// one endpoint paced at rate.
func For(kind Kind, primary string, rate float64) (*Pool, error) {
	regMu.Lock()
	defer regMu.Unlock()
	if p, ok := registry[primary]; ok {
		return p, nil
	}
	p, err := New(kind, Options{URLs: []string{primary}, Rate: rate})
	if err != nil {
		return nil, err
	}
	registry[primary] = p
	return p, nil
}

// TransportFor is the transport of primary's pool (For) over base. A URL
// no pool takes is only paced: the client's own dial then says what is
// wrong with it.
func TransportFor(kind Kind, primary string, rate float64, base http.RoundTripper) http.RoundTripper {
	p, err := For(kind, primary, rate)
	if err != nil {
		return rpclimit.For(primary, rate).Transport(base)
	}
	return p.Transport(base)
}

// Lookup returns the pool registered for primary, or nil.
func Lookup(primary string) *Pool {
	regMu.Lock()
	defer regMu.Unlock()
	return registry[primary]
}

// Transport returns an http.RoundTripper that sends requests, whatever
// their URL, to the pool's endpoints over base.
func (p *Pool) Transport(base http.RoundTripper) http.RoundTripper {
	paced := make([]http.RoundTripper, len(p.eps))
	for i, ep := range p.eps {
		paced[i] = ep.limiter.Transport(base)
	}
	return &transport{p: p, paced: paced}
}

// URLs are the endpoints, in the configured order.
func (p *Pool) URLs() []string { return slices.Clone(p.opts.URLs) }

// Primary is the first endpoint's URL: the one clients dial.
func (p *Pool) Primary() string { return p.opts.URLs[0] }

// EndpointStats is one endpoint as /metrics shows it.
type EndpointStats struct {
	Index       int    // 1-based position in the configured list
	Endpoint    string // scheme and host only: never a key in a path or query
	Healthy     bool
	Head        uint64 // last probed head (0 before a probe answered)
	Lag         uint64 // behind the best probed head
	Requests    int64
	Errors      int64 // failed requests and probes
	Throttled   int64 // 429 answers
	RateWaited  time.Duration
	Trusted     bool
	SingleRoute bool // the pool has one endpoint: no probes, no agreement
}

// Stats reports every endpoint, in the configured order.
func (p *Pool) Stats() []EndpointStats {
	out := make([]EndpointStats, len(p.eps))
	for i, ep := range p.eps {
		out[i] = EndpointStats{
			Index: ep.index, Endpoint: ep.label, Healthy: ep.healthy.Load(), Head: ep.head.Load(), Lag: ep.lag.Load(),
			Requests: ep.requests.Load(), Errors: ep.errors.Load(), Throttled: ep.limiter.Throttled(), RateWaited: ep.limiter.Waited(),
			Trusted: p.trusted(ep), SingleRoute: len(p.eps) == 1,
		}
	}
	return out
}

// Disagreements counts lookups whose trusted endpoints did not report the
// same result (answered as not found yet).
func (p *Pool) Disagreements() int64 { return p.disagreed.Load() }

func (p *Pool) trusted(ep *endpoint) bool {
	if p.trust == nil {
		return true
	}
	for _, t := range p.trust {
		if t == ep {
			return true
		}
	}
	return false
}

// order is the endpoints to try for a read: healthy ones first, each group
// in the configured order.
func (p *Pool) order() []int {
	out := make([]int, 0, len(p.eps))
	for i, ep := range p.eps {
		if ep.healthy.Load() {
			out = append(out, i)
		}
	}
	for i, ep := range p.eps {
		if !ep.healthy.Load() {
			out = append(out, i)
		}
	}
	return out
}

// healthy lists the healthy endpoints among those, or all of them when
// none is healthy (a pool never refuses to try).
func (p *Pool) healthy(among []int) []int {
	var out []int
	for _, i := range among {
		if p.eps[i].healthy.Load() {
			out = append(out, i)
		}
	}
	if len(out) == 0 {
		return among
	}
	return out
}

func (p *Pool) all() []int {
	out := make([]int, len(p.eps))
	for i := range out {
		out[i] = i
	}
	return out
}

func (p *Pool) trustedIndexes() []int {
	if p.trust == nil {
		return p.all()
	}
	out := make([]int, len(p.trust))
	for i, ep := range p.trust {
		out[i] = ep.index - 1
	}
	return out
}

// maybeProbe starts a probe round in the background when the last one is
// older than the probe interval.
func (p *Pool) maybeProbe() {
	if len(p.eps) < 2 || time.Since(time.Unix(0, p.lastProbe.Load())) < p.opts.ProbeInterval {
		return
	}
	if !p.probing.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer p.probing.Store(false)
		p.probe()
	}()
}

// probe reads every endpoint's head at once and sets health and lag.
func (p *Pool) probe() {
	p.lastProbe.Store(time.Now().UnixNano())
	heads := make([]uint64, len(p.eps))
	ok := make([]bool, len(p.eps))
	var wg sync.WaitGroup
	for i, ep := range p.eps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), min(p.opts.Timeout, 5*time.Second))
			defer cancel()
			h, err := p.head(ctx, ep)
			if err != nil {
				ep.errors.Add(1)
				return
			}
			heads[i], ok[i] = h, true
		}()
	}
	wg.Wait()
	var best uint64
	for i := range heads {
		if ok[i] {
			best = max(best, heads[i])
		}
	}
	for i, ep := range p.eps {
		ep.answered.Store(ok[i])
		if !ok[i] {
			ep.healthy.Store(false)
			continue
		}
		ep.head.Store(heads[i])
		ep.lag.Store(best - heads[i])
		ep.healthy.Store(best-heads[i] <= p.opts.MaxLag)
	}
}

func (p *Pool) head(ctx context.Context, ep *endpoint) (uint64, error) {
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"` + p.kind.HeadMethod + `","params":[]}`)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.url.String(), bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := ep.limiter.Transport(http.DefaultTransport).RoundTrip(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	var ans struct {
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&ans); err != nil {
		return 0, err
	}
	if len(ans.Error) > 0 && string(ans.Error) != "null" {
		return 0, errors.New("head: JSON-RPC error")
	}
	return parseNumber(ans.Result)
}

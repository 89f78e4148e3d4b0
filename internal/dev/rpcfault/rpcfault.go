// Package rpcfault is an HTTP JSON-RPC proxy that injects faults, for tests
// against the local chains (or any JSON-RPC node). It sits on 127.0.0.1 in
// front of an upstream endpoint and forwards JSON-RPC 2.0 requests, single
// or batch, unchanged. On request it answers a share of them with JSON-RPC
// errors (or an HTTP status) without reaching the node, lets a share reach
// the node but never returns the answer (the client times out, not knowing
// whether its call took effect), or goes down: connections are refused until
// it is brought up again on the same port. With a FeeMarket (fees.go) it
// prices and silently drops transactions as EtherLink's sequencer does.
// With Lies (lies.go) it is a provider that lags or invents receipts.
package rpcfault

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultHold is how long a timed-out answer is held when Faults.Hold is 0.
const DefaultHold = 30 * time.Second

// Faults say what happens to each HTTP request. Rates are in [0, 1]; the
// rest of the requests are forwarded normally.
type Faults struct {
	// ErrorRate is the share of requests answered at once, without reaching
	// the node: every call in the request gets JSON-RPC error -32603
	// "Internal error", or, with HTTPStatus set, the whole request gets that
	// status (e.g. 503).
	ErrorRate  float64
	HTTPStatus int
	// TimeoutRate is the share of requests forwarded to the node whose answer
	// is withheld until the client gives up (or Hold passes) and the
	// connection is then cut: the call may have taken effect.
	TimeoutRate float64
	// Hold bounds how long a withheld answer keeps its connection (default
	// DefaultHold).
	Hold time.Duration
	// PerSecond > 0 is a public endpoint's rate limit: beyond that many
	// requests in a second, each is answered 429 with Retry-After: 1 (and
	// does not count against the budget).
	PerSecond int
}

// Stats count what the proxy did with the requests it received.
type Stats struct {
	Requests  int64 // HTTP requests received (a batch is one)
	Forwarded int64 // answered by the node
	Errors    int64 // answered with an injected error
	Timeouts  int64 // forwarded, answer withheld
	Dropped   int64 // transactions the FeeMarket dropped silently
	Throttled int64 // answered 429 over Faults.PerSecond
}

// Proxy is a running fault-injecting proxy. Its methods are safe for
// concurrent use.
type Proxy struct {
	upstream string
	addr     string // 127.0.0.1:port, kept across Down/Up
	client   *http.Client
	done     chan struct{}

	mu       sync.Mutex
	faults   Faults
	rng      *rand.Rand
	srv      *http.Server // nil while down
	fees     *FeeMarket   // nil: off
	lies     Lies
	invented map[string]json.RawMessage // receipts made up, by transaction hash
	second   time.Time                  // the rate window's start
	inSecond int                        // requests answered in it

	requests, forwarded, errored, timeouts, dropped, lied, throttled atomic.Int64
}

// Start listens on 127.0.0.1 (a free port) and forwards to upstream, an
// http(s) JSON-RPC endpoint, with no faults. seed seeds the fault draws (0:
// random).
func Start(upstream string, seed uint64) (*Proxy, error) {
	if seed == 0 {
		seed = rand.Uint64()
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("rpcfault: listen: %w", err)
	}
	p := &Proxy{
		upstream: upstream,
		addr:     ln.Addr().String(),
		client:   &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()},
		done:     make(chan struct{}),
		rng:      rand.New(rand.NewPCG(seed, seed^0x5851f42d4c957f2d)),
	}
	p.serve(ln)
	return p, nil
}

// URL is the proxy's endpoint, http://127.0.0.1:PORT; it stays the same
// across Down and Up.
func (p *Proxy) URL() string { return "http://" + p.addr }

// SetFaults replaces the faults applied to requests from now on (the zero
// Faults forwards everything).
func (p *Proxy) SetFaults(f Faults) {
	p.mu.Lock()
	p.faults = f
	p.mu.Unlock()
}

// Down stops listening and closes every open connection: from now on
// connections to URL are refused, as to a node that is down.
func (p *Proxy) Down() error {
	p.mu.Lock()
	srv := p.srv
	p.srv = nil
	p.mu.Unlock()
	if srv == nil {
		return nil
	}
	return srv.Close()
}

// Up listens again on the same address after Down.
func (p *Proxy) Up() error {
	p.mu.Lock()
	up := p.srv != nil
	p.mu.Unlock()
	if up {
		return nil
	}
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		return fmt.Errorf("rpcfault: listen again on %s: %w", p.addr, err)
	}
	p.serve(ln)
	return nil
}

// Close stops the proxy for good, releasing withheld answers.
func (p *Proxy) Close() error {
	select {
	case <-p.done:
	default:
		close(p.done)
	}
	err := p.Down()
	p.client.CloseIdleConnections()
	return err
}

// Stats returns the counters so far.
func (p *Proxy) Stats() Stats {
	return Stats{Requests: p.requests.Load(), Forwarded: p.forwarded.Load(), Errors: p.errored.Load(), Timeouts: p.timeouts.Load(), Dropped: p.dropped.Load(), Throttled: p.throttled.Load()}
}

func (p *Proxy) serve(ln net.Listener) {
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	p.mu.Lock()
	p.srv = srv
	p.mu.Unlock()
	go func() { _ = srv.Serve(ln) }()
}

type fault int

const (
	none fault = iota
	errorFault
	timeoutFault
)

// draw decides the fault of one request.
func (p *Proxy) draw() (fault, Faults) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f := p.faults
	x := p.rng.Float64()
	switch {
	case x < f.ErrorRate:
		return errorFault, f
	case x < f.ErrorRate+f.TimeoutRate:
		return timeoutFault, f
	}
	return none, f
}

// overBudget counts a request against Faults.PerSecond.
func (p *Proxy) overBudget() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.faults.PerSecond <= 0 {
		return false
	}
	if now := time.Now(); now.Sub(p.second) >= time.Second {
		p.second, p.inSecond = now, 0
	}
	if p.inSecond >= p.faults.PerSecond {
		return true
	}
	p.inSecond++
	return false
}

// ServeHTTP forwards one JSON-RPC request, or injects its fault.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.requests.Add(1)
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 50<<20))
	if err != nil {
		http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
		return
	}
	if p.overBudget() {
		p.throttled.Add(1)
		w.Header().Set("Retry-After", "1")
		http.Error(w, http.StatusText(http.StatusTooManyRequests), http.StatusTooManyRequests)
		return
	}
	kind, f := p.draw()
	if kind == errorFault {
		p.errored.Add(1)
		if f.HTTPStatus != 0 {
			http.Error(w, http.StatusText(f.HTTPStatus), f.HTTPStatus)
			return
		}
		writeErrors(w, body)
		return
	}
	p.mu.Lock()
	fees, lies := p.fees, p.lies
	p.mu.Unlock()
	if kind == none && lies.on() {
		p.serveLies(w, r, body, lies)
		return
	}
	if kind == none && fees != nil {
		p.serveFees(w, r, body, *fees)
		return
	}
	status, header, answer, err := p.forward(r, body)
	if err != nil {
		http.Error(w, "upstream node unreachable", http.StatusBadGateway) // its URL may carry a key: not echoed
		return
	}
	if kind == timeoutFault {
		p.timeouts.Add(1)
		hold := cmp.Or(f.Hold, DefaultHold)
		t := time.NewTimer(hold)
		defer t.Stop()
		select {
		case <-r.Context().Done():
		case <-t.C:
		case <-p.done:
		}
		panic(http.ErrAbortHandler) // cut the connection without an answer
	}
	p.forwarded.Add(1)
	for _, k := range []string{"Content-Type", "Content-Encoding"} {
		if v := header.Get(k); v != "" {
			w.Header().Set(k, v)
		}
	}
	w.WriteHeader(status)
	_, _ = w.Write(answer)
}

func (p *Proxy) forward(r *http.Request, body []byte) (int, http.Header, []byte, error) {
	req, err := http.NewRequestWithContext(r.Context(), http.MethodPost, p.upstream, bytes.NewReader(body))
	if err != nil {
		return 0, nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if ae := r.Header.Get("Accept-Encoding"); ae != "" {
		req.Header.Set("Accept-Encoding", ae)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, nil, err
	}
	return resp.StatusCode, resp.Header, answer, nil
}

type errorAnswer struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// writeErrors answers every call in body with JSON-RPC error -32603
// "Internal error", as a batch when body is one.
func writeErrors(w http.ResponseWriter, body []byte) {
	type call struct {
		ID json.RawMessage `json:"id"`
	}
	body = bytes.TrimSpace(body)
	batch := len(body) > 0 && body[0] == '['
	calls := make([]call, 1)
	if batch {
		calls = nil
		_ = json.Unmarshal(body, &calls)
	} else {
		_ = json.Unmarshal(body, &calls[0])
	}
	out := make([]errorAnswer, len(calls))
	for i, c := range calls {
		out[i].JSONRPC, out[i].ID = "2.0", c.ID
		if len(c.ID) == 0 {
			out[i].ID = json.RawMessage("null")
		}
		out[i].Error.Code, out[i].Error.Message = -32603, "Internal error"
	}
	w.Header().Set("Content-Type", "application/json")
	if batch {
		_ = json.NewEncoder(w).Encode(out)
		return
	}
	_ = json.NewEncoder(w).Encode(out[0])
}

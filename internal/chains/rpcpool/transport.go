package rpcpool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// maxAnswer bounds one answer read from an endpoint (eth_getLogs ranges
// are large, but not this large).
const maxAnswer = 64 << 20

type transport struct {
	p     *Pool
	paced []http.RoundTripper // per endpoint, rate-limited over the caller's base
}

// call is what the pool reads of a JSON-RPC call.
type call struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
}

// answer is one JSON-RPC answer, kept as raw parts so it is written back
// unchanged but for merged results.
type answer struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
}

func (a answer) failed() bool { return len(a.Error) > 0 && string(a.Error) != "null" }

// reply is one endpoint's whole HTTP answer, read to the end.
type reply struct {
	ep     int
	status int
	header http.Header
	body   []byte
	err    error
}

func (r reply) ok() bool { return r.err == nil && r.status == http.StatusOK }

func (r reply) response(req *http.Request) *http.Response {
	return &http.Response{
		Status: strconv.Itoa(r.status) + " " + http.StatusText(r.status), StatusCode: r.status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: r.header, Body: io.NopCloser(bytes.NewReader(r.body)), ContentLength: int64(len(r.body)), Request: req,
	}
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		body = b
	}
	p := t.p
	p.maybeProbe()
	if len(p.eps) == 1 {
		return t.finish(req, t.send(req.Context(), 0, req, body))
	}
	calls, batch := parseCalls(body)
	switch {
	case slices.ContainsFunc(calls, func(c call) bool { return slices.Contains(p.kind.Broadcast, c.Method) }):
		return t.broadcast(req, body)
	case slices.ContainsFunc(calls, func(c call) bool { return p.kind.Agree[c.Method] != nil }):
		return t.agree(req, body, calls, batch)
	default:
		return t.read(req, body)
	}
}

func (t *transport) finish(req *http.Request, r reply) (*http.Response, error) {
	if r.err != nil {
		return nil, r.err
	}
	return r.response(req), nil
}

// send makes one request to endpoint i and reads its answer whole; with
// several endpoints it gives up after the pool's timeout so the next can
// be tried. A failure marks the endpoint unhealthy until a probe answers.
func (t *transport) send(ctx context.Context, i int, orig *http.Request, body []byte) reply {
	ep := t.p.eps[i]
	if len(t.p.eps) > 1 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t.p.opts.Timeout)
		defer cancel()
	}
	req := orig.Clone(ctx)
	req.URL = ep.url
	req.Host = ep.url.Host
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	req.ContentLength = int64(len(body))
	ep.requests.Add(1)
	r := reply{ep: i}
	resp, err := t.paced[i].RoundTrip(req)
	if err == nil {
		r.status, r.header = resp.StatusCode, resp.Header
		r.body, err = io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
		resp.Body.Close()
	}
	if err != nil {
		// The transport's error names the URL, which may carry a key.
		r.err = fmt.Errorf("%s endpoint %d (%s): %w", t.p.kind.Name, ep.index, ep.label, unwrapURL(err))
	}
	if !r.ok() {
		ep.errors.Add(1)
		if len(t.p.eps) > 1 && orig.Context().Err() == nil {
			ep.healthy.Store(false)
		}
	}
	return r
}

// read sends to the healthiest endpoint, failing over in order.
func (t *transport) read(req *http.Request, body []byte) (*http.Response, error) {
	var last reply
	for _, i := range t.p.order() {
		last = t.send(req.Context(), i, req, body)
		if last.ok() || req.Context().Err() != nil {
			break
		}
	}
	return t.finish(req, last)
}

// fanOut sends to every endpoint in targets at once. Replies arrive on
// the channel, which holds them all so nothing waits on a caller that
// stopped reading. Sends outlive the caller's context by up to the pool
// timeout: a broadcast must reach every endpoint even once one took it.
func (t *transport) fanOut(req *http.Request, body []byte, targets []int) <-chan reply {
	out := make(chan reply, len(targets))
	ctx := context.WithoutCancel(req.Context())
	for _, i := range targets {
		go func() { out <- t.send(ctx, i, req, body) }()
	}
	return out
}

// broadcast sends a signed transaction to every healthy endpoint and
// answers with the first that accepted every call (no JSON-RPC error),
// else the first endpoint (in order) that answered at all.
func (t *transport) broadcast(req *http.Request, body []byte) (*http.Response, error) {
	targets := t.p.healthy(t.p.order())
	replies := t.fanOut(req, body, targets)
	got := make([]reply, 0, len(targets))
	for range targets {
		r := <-replies
		if r.ok() && !anyFailed(r.body) {
			return r.response(req), nil
		}
		got = append(got, r)
	}
	return t.finish(req, firstInOrder(got, targets))
}

// agree sends a lookup to every trusted healthy endpoint and keeps a
// lookup's result only where all that answered report the same.
func (t *transport) agree(req *http.Request, body []byte, calls []call, batch bool) (*http.Response, error) {
	targets := t.p.healthy(t.p.trustedIndexes())
	if len(targets) == 1 {
		return t.finish(req, t.send(req.Context(), targets[0], req, body))
	}
	replies := t.fanOut(req, body, targets)
	var answered []reply
	var failed []reply
	for range targets {
		r := <-replies
		if r.ok() {
			answered = append(answered, r)
		} else {
			failed = append(failed, r)
		}
	}
	if len(answered) == 0 {
		return t.finish(req, firstInOrder(failed, targets))
	}
	base := firstInOrder(answered, targets)
	merged, err := t.merge(base, answered, calls, batch)
	if err != nil {
		return base.response(req), nil // an answer the pool cannot read is passed on as it is
	}
	base.body = merged
	base.header = base.header.Clone()
	base.header.Del("Content-Length")
	base.header.Del("Content-Encoding")
	return base.response(req), nil
}

// merge rewrites base's answers to the agreeing calls.
func (t *transport) merge(base reply, all []reply, calls []call, batch bool) ([]byte, error) {
	parsed := make([]map[string]answer, len(all))
	var baseAnswers []answer
	for i, r := range all {
		as, err := parseAnswers(r.body, batch)
		if err != nil {
			return nil, err
		}
		parsed[i] = map[string]answer{}
		for _, a := range as {
			parsed[i][string(a.ID)] = a
		}
		if r.ep == base.ep {
			baseAnswers = as
		}
	}
	methods := map[string]string{}
	for _, c := range calls {
		methods[string(c.ID)] = c.Method
	}
	for k, a := range baseAnswers {
		rule := t.p.kind.Agree[methods[string(a.ID)]]
		if rule == nil || a.failed() {
			continue
		}
		results := make([]json.RawMessage, 0, len(all))
		var refused *answer
		for i := range all {
			other, ok := parsed[i][string(a.ID)]
			if !ok {
				other = answer{Error: json.RawMessage(`{"code":-32603,"message":"rpcpool: an endpoint left this call unanswered"}`)}
			}
			if other.failed() {
				refused = &other
				break
			}
			results = append(results, other.Result)
		}
		if refused != nil { // one trusted endpoint could not say: neither can the pool
			baseAnswers[k].Result, baseAnswers[k].Error = nil, refused.Error
			continue
		}
		res, agreed := rule(results)
		if !agreed {
			t.p.disagreed.Add(1)
		}
		if res == nil {
			res = json.RawMessage("null")
		}
		baseAnswers[k].Result = res
	}
	if batch {
		return json.Marshal(baseAnswers)
	}
	if len(baseAnswers) != 1 {
		return nil, errors.New("not one answer")
	}
	return json.Marshal(baseAnswers[0])
}

// firstInOrder is the reply from the endpoint that comes first in order.
func firstInOrder(replies []reply, order []int) reply {
	for _, i := range order {
		for _, r := range replies {
			if r.ep == i {
				return r
			}
		}
	}
	return reply{err: errors.New("rpcpool: no endpoint answered")}
}

func parseCalls(body []byte) ([]call, bool) {
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] == '[' {
		var cs []call
		if json.Unmarshal(body, &cs) != nil {
			return nil, true
		}
		return cs, true
	}
	var c call
	if json.Unmarshal(body, &c) != nil {
		return nil, false
	}
	return []call{c}, false
}

func parseAnswers(body []byte, batch bool) ([]answer, error) {
	if batch {
		var as []answer
		err := json.Unmarshal(body, &as)
		return as, err
	}
	var a answer
	if err := json.Unmarshal(body, &a); err != nil {
		return nil, err
	}
	return []answer{a}, nil
}

// anyFailed reports whether an answer (single or batch) holds an error.
func anyFailed(body []byte) bool {
	body = bytes.TrimSpace(body)
	as, err := parseAnswers(body, len(body) > 0 && body[0] == '[')
	if err != nil {
		return true
	}
	return slices.ContainsFunc(as, answer.failed)
}

// parseNumber reads a head: a hex quantity ("0x1a") or a JSON integer.
func parseNumber(raw json.RawMessage) (uint64, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if !strings.HasPrefix(s, "0x") {
			return 0, fmt.Errorf("head %q is not a hex quantity", s)
		}
		return strconv.ParseUint(s[2:], 16, 64)
	}
	var n uint64
	if err := json.Unmarshal(raw, &n); err != nil {
		return 0, fmt.Errorf("head is not a number")
	}
	return n, nil
}

// unwrapURL drops a *url.Error's wrapper, whose text carries the URL.
func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

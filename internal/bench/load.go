package bench

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// request is one POST /v1/evidence the load generator made. A run keeps
// one per request until it is analysed, hundreds of thousands of them, so it
// is small and holds no pointers: the benchmark's own memory must not pass
// for keeper's growth.
type request struct {
	due     int64         // Unix ns when it was scheduled (open loop) or sent (closed loop)
	latency time.Duration // from due to the whole answer read
	id      [12]byte      // the evidence id of a 202, "ev_" + these bytes in hex
	status  int16         // HTTP status; 0 when the request failed before an answer
	hasID   bool
	steps   steps // where its time went (not kept by a closed loop's spool)
}

// steps is where one request's time went, in microseconds: how late the
// bench sent it, and the steps of keeper's answer from its Server-Timing
// header (internal/anchor/servertiming.go).
type steps struct {
	late                                    int32 // due → handed to the HTTP client
	read, admit, queue, writer, commit, app int32
}

// parseServerTiming reads keeper's Server-Timing header into st.
func parseServerTiming(h string, st *steps) {
	for h != "" {
		var m string
		m, h, _ = strings.Cut(h, ",")
		name, dur, ok := strings.Cut(strings.TrimSpace(m), ";dur=")
		if !ok {
			continue
		}
		ms, err := strconv.ParseFloat(dur, 64)
		if err != nil {
			continue
		}
		us := int32(ms * 1000)
		switch name {
		case "read":
			st.read = us
		case "admit":
			st.admit = us
		case "queue":
			st.queue = us
		case "writer":
			st.writer = us
		case "commit":
			st.commit = us
		case "app":
			st.app = us
		}
	}
}

func (r request) dueAt() time.Time { return time.Unix(0, r.due) }

// evidence is the evidence id of a 202, "" otherwise.
func (r request) evidence() string {
	if !r.hasID {
		return ""
	}
	return "ev_" + hex.EncodeToString(r.id[:])
}

// load is one run of the load generator.
type load struct {
	start, end time.Time // first due time; when the last answer arrived
	reqs       []request
}

func (l load) accepted() []request {
	var out []request
	for _, r := range l.reqs {
		if r.status == http.StatusAccepted && r.hasID {
			out = append(out, r)
		}
	}
	return out
}

// loader posts distinct evidence digests to keeper's API: with several API
// nodes, to each in turn.
type loader struct {
	hc     *http.Client
	urls   []string
	chains []byte // JSON array
	run    string // makes digests distinct between runs
	token  string // API token, when the node asks for one
	bulk   int    // evidence per request to POST /v1/evidence/batch (0: one per POST /v1/evidence)
	seq    atomic.Int64
}

// newBulkLoader is a loader that posts size evidence per request to POST
// /v1/evidence/batch.
func newBulkLoader(apiAddrs []string, run, token string, chains []string, size int) *loader {
	l := newLoader(apiAddrs, run, token, chains)
	for i := range l.urls {
		l.urls[i] += "/batch"
	}
	l.bulk = size
	return l
}

func newLoader(apiAddrs []string, run, token string, chains []string) *loader {
	cj, _ := json.Marshal(chains)
	var urls []string
	for _, a := range apiAddrs {
		urls = append(urls, "http://"+a+"/v1/evidence")
	}
	return &loader{
		hc: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
			MaxIdleConns: 4096, MaxIdleConnsPerHost: 4096, IdleConnTimeout: time.Minute, DisableCompression: true,
		}},
		urls: urls, chains: cj, run: run, token: token,
	}
}

func (l *loader) close() { l.hc.CloseIdleConnections() }

// post sends one evidence; latency counts from due, so a request that waited
// for a stalled server carries the wait.
func (l *loader) post(ctx context.Context, due time.Time) request {
	seq := l.seq.Add(1)
	d := sha256.Sum256([]byte(l.run + "/" + itoa(seq)))
	body := make([]byte, 0, 128)
	body = append(body, `{"digest":"`...)
	body = hex.AppendEncode(body, d[:])
	body = append(body, `","chains":`...)
	body = append(body, l.chains...)
	body = append(body, '}')
	r := request{due: due.UnixNano()}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.urls[seq%int64(len(l.urls))], bytes.NewReader(body))
	if err != nil {
		r.latency = time.Since(due)
		return r
	}
	req.Header.Set("Content-Type", "application/json")
	if l.token != "" {
		req.Header.Set("Authorization", "Bearer "+l.token)
	}
	r.steps.late = int32(time.Since(due).Microseconds())
	resp, err := l.hc.Do(req)
	if err != nil {
		r.latency = time.Since(due)
		return r
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	r.latency = time.Since(due)
	if err != nil {
		return r
	}
	r.status = int16(resp.StatusCode)
	parseServerTiming(resp.Header.Get("Server-Timing"), &r.steps)
	if id := evidenceID(raw); r.status == http.StatusAccepted && strings.HasPrefix(id, "ev_") {
		_, err := hex.Decode(r.id[:], []byte(id[3:]))
		r.hasID = err == nil
	}
	return r
}

// postBulk sends l.bulk evidence in one request and appends one request
// record per evidence to out: the request's status and latency, and, for
// each item the answer says was stored (202), its id.
func (l *loader) postBulk(ctx context.Context, due time.Time, out []request) []request {
	seq := l.seq.Add(int64(l.bulk)) - int64(l.bulk)
	body := make([]byte, 0, 128*l.bulk+16)
	body = append(body, `{"items":[`...)
	for i := range l.bulk {
		if i > 0 {
			body = append(body, ',')
		}
		d := sha256.Sum256([]byte(l.run + "/" + itoa(seq+int64(i)+1)))
		body = append(body, `{"digest":"`...)
		body = hex.AppendEncode(body, d[:])
		body = append(body, `","chains":`...)
		body = append(body, l.chains...)
		body = append(body, '}')
	}
	body = append(body, `]}`...)
	failed := func(status int16) []request {
		r := request{due: due.UnixNano(), latency: time.Since(due), status: status}
		for range l.bulk {
			out = append(out, r)
		}
		return out
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.urls[seq/int64(l.bulk)%int64(len(l.urls))], bytes.NewReader(body))
	if err != nil {
		return failed(0)
	}
	req.Header.Set("Content-Type", "application/json")
	if l.token != "" {
		req.Header.Set("Authorization", "Bearer "+l.token)
	}
	resp, err := l.hc.Do(req)
	if err != nil {
		return failed(0)
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusMultiStatus {
		return failed(int16(resp.StatusCode))
	}
	latency := time.Since(due)
	// Each item's answer is one object: {"index":…,"status":202,"id":"ev_…",…}.
	for _, item := range bytes.Split(raw, []byte(`{"index":`))[1:] {
		r := request{due: due.UnixNano(), latency: latency}
		if bytes.Contains(item, []byte(`"status":202`)) {
			r.status = http.StatusAccepted
			if id := evidenceID(item); strings.HasPrefix(id, "ev_") {
				_, err := hex.Decode(r.id[:], []byte(id[3:]))
				r.hasID = err == nil
			}
		} else {
			r.status = http.StatusBadRequest
		}
		out = append(out, r)
	}
	return out
}

// evidenceID finds the "id" of an intake answer without decoding it whole.
func evidenceID(raw []byte) string {
	i := bytes.Index(raw, []byte(`"id"`))
	if i < 0 {
		return ""
	}
	rest := raw[i+4:]
	j := bytes.IndexByte(rest, '"')
	if j < 0 || len(rest) < j+28 {
		return ""
	}
	return string(rest[j+1 : j+28])
}

// openLoop posts at a constant arrival rate for d, whatever the answers do:
// request i is due at start + i/rate and is handed to a free client then,
// even when earlier ones are still waiting. A client pool (like any real
// client's connection pool) sends them; when a stalled server keeps every
// client busy, due requests queue and the wait shows in their latency, which
// counts from the due time, instead of slowing the arrivals down.
func (l *loader) openLoop(ctx context.Context, rate float64, d time.Duration) load {
	n := int(rate * d.Seconds())
	out := load{reqs: make([]request, n)}
	interval := time.Duration(float64(time.Second) / rate)
	clients := min(max(int(rate/10), 8), 256)
	due := make(chan int, n)
	var wg sync.WaitGroup
	out.start = time.Now()
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range due {
				out.reqs[i] = l.post(ctx, out.start.Add(time.Duration(i)*interval))
			}
		}()
	}
	sent := n
	for i := 0; i < n; i++ {
		if wait := time.Until(out.start.Add(time.Duration(i) * interval)); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				sent = i
			case <-t.C:
			}
			if sent < n {
				break
			}
		}
		due <- i
	}
	close(due)
	wg.Wait()
	out.reqs = out.reqs[:sent]
	out.end = time.Now()
	return out
}

// closedLoop posts from conc clients back to back for d (or at most rate
// requests per second overall when rate > 0): as much as intake accepts.
func (l *loader) closedLoop(ctx context.Context, conc int, rate float64, d time.Duration) (load, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out := load{start: time.Now()}
	stop := out.start.Add(d)
	var tick <-chan time.Time
	if rate > 0 {
		// A token per due time; clients take them as they come free.
		tokens := make(chan time.Time, conc)
		tick = tokens
		go func() {
			interval := time.Duration(float64(time.Second) / rate)
			for i := 0; ; i++ {
				due := out.start.Add(time.Duration(i) * interval)
				if due.After(stop) {
					close(tokens)
					return
				}
				if wait := time.Until(due); wait > 0 {
					time.Sleep(wait)
				}
				select {
				case tokens <- due:
				case <-ctx.Done():
					close(tokens)
					return
				}
			}
		}()
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sp := newSpool()
	for c := 0; c < conc; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []request
			for {
				if sp != nil && len(mine) >= spoolFlush {
					sp.write(mine)
					mine = mine[:0]
				}
				due := time.Now()
				if tick != nil {
					t, ok := <-tick
					if !ok {
						break
					}
					due = t
				} else if due.After(stop) || ctx.Err() != nil {
					break
				}
				if l.bulk > 0 {
					mine = l.postBulk(ctx, due, mine)
				} else {
					mine = append(mine, l.post(ctx, due))
				}
			}
			if sp != nil {
				sp.write(mine)
				return
			}
			mu.Lock()
			out.reqs = append(out.reqs, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	out.end = time.Now()
	if sp != nil {
		var err error
		if out.reqs, err = sp.readAll(); err != nil {
			return out, err
		}
	}
	return out, nil
}

func itoa(n int64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}

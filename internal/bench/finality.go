package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/keeperhq/keeper/internal/node"
)

// How the bench dates an anchor's inclusion and its finality: it follows
// each local chain's head and finalized block (slot) from outside keeper,
// as any RPC client sees them, every watchEvery. The block that makes an
// anchor final is the one whose arrival moved the chain's finalized block
// to the anchor's or past it: the chain's own rule (devchain: finalized =
// head − 32; devnet: the slot 32 behind the tip), read, not recomputed, so
// a chain whose finality stalls is measured as it behaves.

// watchEvery is how often the bench asks each local chain for its head and
// finalized block: a block is dated to within half of it.
const watchEvery = 20 * time.Millisecond

// mark is one value a chain's head or finalized block moved to, and when.
type mark struct {
	n  uint64
	at time.Time
}

// heights is one chain's head and finalized block as the bench saw them
// move, each value in the order seen (they only grow).
type heights struct {
	heads, finals []mark
}

// first is when the first of ms at or past n was seen.
func first(ms []mark, n uint64) (time.Time, bool) {
	i := sort.Search(len(ms), func(i int) bool { return ms[i].n >= n })
	if i == len(ms) {
		return time.Time{}, false
	}
	return ms[i].at, true
}

// heightProbe asks a chain for its head and its finalized block.
type heightProbe func(ctx context.Context) (head, final uint64, err error)

// blockWatch follows the local chains' heights while a phase runs.
type blockWatch struct {
	mu     sync.Mutex
	chains map[string]*heights
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// watchBlocks starts following the stack's local EVM and Solana chains
// (remote ones are not asked this often; the stub has no blocks).
func watchBlocks(ctx context.Context, st *stack) *blockWatch {
	ctx, cancel := context.WithCancel(ctx)
	w := &blockWatch{chains: map[string]*heights{}, cancel: cancel}
	hc := &http.Client{Timeout: 5 * time.Second}
	for _, c := range st.cfg.Chains {
		var probe heightProbe
		switch {
		case !st.local[c]:
			continue
		case c == "etherlink":
			probe = evmHeights(hc, node.EVMRPC(st.cfg))
		case c == "solana":
			probe = solanaHeights(hc, node.SolanaRPC(st.cfg))
		default:
			continue
		}
		h := &heights{}
		w.chains[c] = h
		w.wg.Add(1)
		go w.follow(ctx, h, probe)
	}
	return w
}

// stop ends the watch; what it saw stays readable.
func (w *blockWatch) stop() {
	w.cancel()
	w.wg.Wait()
}

// watched lists the chains followed.
func (w *blockWatch) watched() []string {
	var out []string
	for c := range w.chains {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}

// follow asks probe every watchEvery and notes each new head and finalized
// block, dated halfway between the last answer without it and the first
// with it.
func (w *blockWatch) follow(ctx context.Context, h *heights, probe heightProbe) {
	defer w.wg.Done()
	t := time.NewTicker(watchEvery)
	defer t.Stop()
	var last time.Time
	for {
		head, final, err := probe(ctx)
		now := time.Now()
		if err == nil {
			at := now
			if !last.IsZero() {
				at = last.Add(now.Sub(last) / 2)
			}
			w.mu.Lock()
			h.heads = note(h.heads, head, at)
			h.finals = note(h.finals, final, at)
			w.mu.Unlock()
			last = now
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func note(ms []mark, n uint64, at time.Time) []mark {
	if len(ms) > 0 && ms[len(ms)-1].n >= n {
		return ms
	}
	return append(ms, mark{n: n, at: at})
}

// included is when the block (slot) n of chain appeared; final, when the
// block that made it final did.
func (w *blockWatch) included(chain string, n uint64) (time.Time, bool) {
	return w.find(chain, n, func(h *heights) []mark { return h.heads })
}

func (w *blockWatch) final(chain string, n uint64) (time.Time, bool) {
	return w.find(chain, n, func(h *heights) []mark { return h.finals })
}

func (w *blockWatch) find(chain string, n uint64, of func(*heights) []mark) (time.Time, bool) {
	h, ok := w.chains[chain]
	if !ok || n == 0 {
		return time.Time{}, false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return first(of(h), n)
}

// evmHeights asks an EVM node for eth_blockNumber and the `finalized`
// block in one batch request.
func evmHeights(hc *http.Client, url string) heightProbe {
	return func(ctx context.Context) (uint64, uint64, error) {
		res, err := rpcBatch(ctx, hc, url, []rpcCall{
			{Method: "eth_blockNumber", Params: []any{}},
			{Method: "eth_getBlockByNumber", Params: []any{"finalized", false}},
		})
		if err != nil {
			return 0, 0, err
		}
		var head string
		var fin *struct {
			Number string `json:"number"`
		}
		if err := json.Unmarshal(res[0], &head); err != nil {
			return 0, 0, err
		}
		if err := json.Unmarshal(res[1], &fin); err != nil {
			return 0, 0, err
		}
		h, err := hexNumber(head)
		if err != nil || fin == nil {
			return h, 0, err
		}
		f, err := hexNumber(fin.Number)
		return h, f, err
	}
}

// solanaHeights asks a Solana node for its processed and finalized slots
// in one batch request.
func solanaHeights(hc *http.Client, url string) heightProbe {
	return func(ctx context.Context) (uint64, uint64, error) {
		res, err := rpcBatch(ctx, hc, url, []rpcCall{
			{Method: "getSlot", Params: []any{map[string]string{"commitment": "processed"}}},
			{Method: "getSlot", Params: []any{map[string]string{"commitment": "finalized"}}},
		})
		if err != nil {
			return 0, 0, err
		}
		var head, fin uint64
		if err := json.Unmarshal(res[0], &head); err != nil {
			return 0, 0, err
		}
		err = json.Unmarshal(res[1], &fin)
		return head, fin, err
	}
}

func hexNumber(s string) (uint64, error) {
	return strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 64)
}

type rpcCall struct {
	Method string
	Params []any
}

// rpcBatch makes one JSON-RPC 2.0 batch request and returns the results in
// the order of calls.
func rpcBatch(ctx context.Context, hc *http.Client, url string, calls []rpcCall) ([]json.RawMessage, error) {
	type req struct {
		JSONRPC string `json:"jsonrpc"`
		ID      int    `json:"id"`
		Method  string `json:"method"`
		Params  []any  `json:"params"`
	}
	reqs := make([]req, len(calls))
	for i, c := range calls {
		reqs[i] = req{JSONRPC: "2.0", ID: i, Method: c.Method, Params: c.Params}
	}
	body, err := json.Marshal(reqs)
	if err != nil {
		return nil, err
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	hr.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(hr)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var answers []struct {
		ID     int             `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&answers); err != nil {
		return nil, fmt.Errorf("bench: chain heights: %w", err)
	}
	out := make([]json.RawMessage, len(calls))
	for _, a := range answers {
		if a.ID < 0 || a.ID >= len(calls) {
			continue
		}
		if a.Error != nil {
			return nil, fmt.Errorf("bench: chain heights: %s: %s", calls[a.ID].Method, a.Error.Message)
		}
		out[a.ID] = a.Result
	}
	for i, r := range out {
		if r == nil {
			return nil, fmt.Errorf("bench: chain heights: no answer to %s", calls[i].Method)
		}
	}
	return out, nil
}

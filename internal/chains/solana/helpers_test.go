package solana

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	sol "github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/chains"
	"github.com/keeperhq/keeper/internal/dev/devnet"
	"github.com/keeperhq/keeper/receipt/verify"
)

func newKey(t *testing.T) sol.PrivateKey {
	t.Helper()
	k, err := sol.NewRandomPrivateKey()
	require.NoError(t, err)
	return k
}

func rootOf(s string) [32]byte { return sha256.Sum256([]byte(s)) }

// newAdapter returns an adapter on url with fast polling; opts adjust cfg.
func newAdapter(t *testing.T, url string, payer sol.PrivateKey, opts ...func(*Config)) *Adapter {
	t.Helper()
	cfg := Config{
		RPCURL:              url,
		Payer:               payer,
		PollInterval:        50 * time.Millisecond,
		RebroadcastInterval: 100 * time.Millisecond,
		RPCTimeout:          5 * time.Second,
	}
	for _, o := range opts {
		o(&cfg)
	}
	a, err := New(cfg)
	require.NoError(t, err)
	t.Cleanup(a.Close)
	return a
}

// waitFor polls Status (as ConfirmAnchor does) until the batch leaves Pending.
func waitFor(t *testing.T, a *Adapter, batch int64, j chains.Journal, within time.Duration) chains.Status {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	for {
		st, err := a.Status(ctx, batch, j)
		require.NoError(t, err, "status of batch %d", batch)
		if st.State != chains.Pending {
			return st
		}
		select {
		case <-ctx.Done():
			t.Fatalf("batch %d still pending after %s: %+v", batch, within, st)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// expireBlocks is enough blocks for a blockhash to expire (150) and for the
// finalized block height to pass its lastValidBlockHeight (32 more).
const expireBlocks = 200

// startDevnet starts an in-process Solana devnet producing a slot every
// slotTime and returns it with a funded fee payer.
func startDevnet(t *testing.T, slotTime time.Duration) (*devnet.Devnet, sol.PrivateKey) {
	t.Helper()
	d, err := devnet.Start(t.Context(), devnet.Options{SlotTime: slotTime})
	require.NoError(t, err)
	t.Cleanup(d.Stop)
	payer, err := d.NewFundedKey(10 * devnet.LamportsPerSOL)
	require.NoError(t, err)
	return d, payer
}

// anchorsOnChain counts the succeeded transactions of payer whose memo
// anchors root.
func anchorsOnChain(t *testing.T, url string, payer sol.PublicKey, root [32]byte) int {
	t.Helper()
	client := rpc.New(url)
	ctx := context.Background()
	limit := 1000
	sigs, err := client.GetSignaturesForAddressWithOpts(ctx, payer, &rpc.GetSignaturesForAddressOpts{Limit: &limit, Commitment: rpc.CommitmentConfirmed})
	require.NoError(t, err)
	n := 0
	for _, s := range sigs {
		v, err := verify.Solana(ctx, url, s.Signature.String())
		require.NoError(t, err)
		if v.Found && v.Succeeded && v.Root == root {
			n++
		}
	}
	return n
}

// countingProxy forwards JSON-RPC requests to a node and records, per
// method, the calls and the largest signature list sent.
type countingProxy struct {
	srv    *httptest.Server
	mu     sync.Mutex
	counts map[string]int
	maxSig int
}

func newCountingProxy(t *testing.T, target string) *countingProxy {
	t.Helper()
	p := &countingProxy{counts: map[string]int{}}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var req struct {
			Method string            `json:"method"`
			Params []json.RawMessage `json:"params"`
		}
		if json.Unmarshal(body, &req) == nil {
			p.mu.Lock()
			p.counts[req.Method]++
			if req.Method == "getSignatureStatuses" && len(req.Params) > 0 {
				var sigs []string
				_ = json.Unmarshal(req.Params[0], &sigs)
				p.maxSig = max(p.maxSig, len(sigs))
			}
			p.mu.Unlock()
		}
		resp, err := http.Post(target, "application/json", bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *countingProxy) URL() string { return p.srv.URL }

func (p *countingProxy) calls(method string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.counts[method]
}

func (p *countingProxy) maxSignatures() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.maxSig
}

package testsuite

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/ethclient"
	sol "github.com/gagliardetto/solana-go"
	solrpc "github.com/gagliardetto/solana-go/rpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/converter"

	"github.com/keeperhq/keeper/internal/chains/evm"
	"github.com/keeperhq/keeper/internal/chains/solana"
	"github.com/keeperhq/keeper/internal/cli"
	"github.com/keeperhq/keeper/internal/config"
	"github.com/keeperhq/keeper/internal/dev/devchain"
	"github.com/keeperhq/keeper/internal/dev/devnet"
	"github.com/keeperhq/keeper/internal/dev/rpcfault"
	"github.com/keeperhq/keeper/internal/node"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/workflows"
)

// The chain-fault suite: keeper anchoring on the local chains while they
// misbehave. Each test runs its own Temporal server, chains and keeper node,
// so the tests run in parallel; each ends with every evidence confirmed
// exactly once, checked in the store, in the receipts and on the chains, and
// with the retries visible on /metrics and in the AnchorBatch histories.

const (
	evmBlockTime   = 100 * time.Millisecond
	solanaSlotTime = 25 * time.Millisecond
	// solanaFee is the base fee of one anchor: one signature (a priority fee comes on top).
	solanaFee = 5000
)

// faultOptions choose the chains of a fault stack and what sits in front of them.
type faultOptions struct {
	evm, solana        bool
	evmProxy, solProxy bool // keeper reaches the chain through an rpcfault proxy
	// evmURLs, solURLs, when set, give the chain's several providers
	// (KEEPER_<CHAIN>_RPC_URLS).
	evmURLs func(t *testing.T, c *devchain.Chain) []string
	solURLs func(t *testing.T, d *devnet.Devnet) []string
	// tune changes the stack's configuration before its node starts.
	tune func(s *faultStack)
}

// faultStack is one keeper node (API and worker) on its own Temporal server
// and local chains.
type faultStack struct {
	cfg      config.Config
	st       *store.Store
	node     *node.Node
	chains   []string
	evm      *devchain.Chain
	sol      *devnet.Devnet
	evmProxy *rpcfault.Proxy
	solProxy *rpcfault.Proxy
	evmAd    *evm.Adapter
	solAd    *solana.Adapter
}

func startFaultStack(t *testing.T, o faultOptions) *faultStack {
	t.Helper()
	dir := tempDir(t)
	srv := startServer(t, dir)
	cfg := testConfig(dir)
	cfg.ConfirmPoll = 100 * time.Millisecond
	cfg.BatchMaxItems = 4 // several batches per test
	// The anchor backoff (docs/retries.md) on shorter numbers (1 s base, 15 s cap instead of
	// 5 s and 300 s): a 2-minute outage costs an activity about 12 of its 20
	// attempts, where the default numbers would spend 5, and a retry follows
	// the end of a fault within 15 s.
	cfg.RetryBase, cfg.RetryCap, cfg.RetryJitter = time.Second, 15*time.Second, 500*time.Millisecond
	// An unmined EVM anchor is found dropped (and re-signed) after 3 s.
	cfg.EVM.ResubmitTimeout = 3 * time.Second
	s := &faultStack{cfg: cfg}
	ctx := context.Background()
	if o.evm {
		c, err := devchain.Start(ctx, devchain.Options{Dir: t.TempDir(), BlockTime: evmBlockTime, Logger: testLogger(t)})
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Stop() })
		s.evm, s.cfg.EVM.RPCURL, s.cfg.EVM.KeyFile = c, c.URL(), c.KeyFile()
		if o.evmProxy {
			s.evmProxy = startProxy(t, c.URL())
			s.cfg.EVM.RPCURL = s.evmProxy.URL()
		}
		if o.evmURLs != nil {
			s.cfg.EVM.RPCURL, s.cfg.EVM.RPC.URLs = "", o.evmURLs(t, c)
		}
		s.chains = append(s.chains, evm.Name)
	}
	if o.solana {
		d, err := devnet.Start(ctx, devnet.Options{Dir: t.TempDir(), SlotTime: solanaSlotTime})
		require.NoError(t, err)
		t.Cleanup(d.Stop)
		s.sol, s.cfg.Solana.RPCURL, s.cfg.Solana.KeyFile = d, d.URL(), d.FaucetKeyFile()
		if o.solProxy {
			s.solProxy = startProxy(t, d.URL())
			s.cfg.Solana.RPCURL = s.solProxy.URL()
		}
		if o.solURLs != nil {
			s.cfg.Solana.RPCURL, s.cfg.Solana.RPC.URLs = "", o.solURLs(t, d)
		}
		s.chains = append(s.chains, solana.Name)
	}
	s.cfg.Chains = s.chains
	if o.tune != nil {
		o.tune(s)
	}
	chs, err := node.NewChains(ctx, s.cfg, nil, testLogger(t))
	require.NoError(t, err)
	if a, ok := chs[evm.Name].(*evm.Adapter); ok {
		s.evmAd = a
		t.Cleanup(a.Close)
	}
	if a, ok := chs[solana.Name].(*solana.Adapter); ok {
		s.solAd = a
		t.Cleanup(a.Close)
	}
	s.st = openStore(t, dir)
	s.node = startNode(t, srv, s.cfg, node.Roles{API: true, Worker: true}, s.st, chs)
	return s
}

func startProxy(t *testing.T, upstream string) *rpcfault.Proxy {
	t.Helper()
	p, err := rpcfault.Start(upstream, 0)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// post hands in n evidence for every chain of the stack, numbered from
// first, and returns their ids.
func (s *faultStack) post(t *testing.T, first, n int) []string {
	t.Helper()
	hc := &http.Client{Timeout: 10 * time.Second}
	var ids []string
	for i := first; i < first+n; i++ {
		code, id, err := post(hc, s.node.APIAddr(), map[string]any{"digest": digest(t.Name(), i), "chains": s.chains})
		require.NoError(t, err)
		require.Equal(t, http.StatusAccepted, code)
		ids = append(ids, id)
	}
	return ids
}

// batchesOf returns the batches the evidence are in on chain (0 while not
// yet batched), in order of first appearance.
func (s *faultStack) batchesOf(t *testing.T, ids []string, chain string) []int64 {
	t.Helper()
	var out []int64
	seen := map[int64]bool{}
	for _, id := range ids {
		ev, err := s.st.GetEvidence(context.Background(), id)
		require.NoError(t, err)
		for _, a := range ev.Anchors {
			if a.Chain == chain && !seen[a.BatchID] {
				seen[a.BatchID] = true
				out = append(out, a.BatchID)
			}
		}
	}
	return out
}

// waitSubmitted waits until every evidence is in a batch on chain whose
// transaction was journaled and broadcast (the batch is submitted, or
// already confirmed), and returns the batches.
func (s *faultStack) waitSubmitted(t *testing.T, ids []string, chain string) []int64 {
	t.Helper()
	var batches []int64
	require.Eventually(t, func() bool {
		batches = s.batchesOf(t, ids, chain)
		for _, b := range batches {
			got, err := s.st.GetBatch(context.Background(), b)
			if b == 0 || err != nil || got.State != store.BatchSubmitted && got.State != store.BatchConfirmed {
				return false
			}
		}
		return true
	}, time.Minute, 20*time.Millisecond, "every %s batch submitted", chain)
	return batches
}

// journal returns the transactions journaled for a batch.
func (s *faultStack) journal(t *testing.T, batch int64) []string {
	t.Helper()
	recs, err := s.st.Transactions(context.Background(), batch)
	require.NoError(t, err)
	refs := make([]string, len(recs))
	for i, r := range recs {
		refs[i] = r.Ref
	}
	return refs
}

// checkExactlyOnce waits until every evidence is confirmed and checks that
// it was anchored exactly once on each of its chains: in the store (one
// confirmed anchor per chain, one leaf per evidence, batches confirmed), in
// its receipt (the proof, and the transaction read back from the chain: it
// exists, carries the root, succeeded and is final) and on the chains (the
// EVM signer sent exactly one transaction per batch; exactly one signature
// per Solana batch landed, finalized, and the fee payer paid for no other).
func (s *faultStack) checkExactlyOnce(t *testing.T, ids []string, limit time.Duration) {
	t.Helper()
	ctx := context.Background()
	func() {
		confirmed := false
		defer func() { // also when waitConfirmed fails the test
			if !confirmed {
				s.explainUnconfirmed(t, ids)
			}
		}()
		waitConfirmed(t, s.st, len(ids), limit)
		confirmed = true
	}()

	batches := map[string]map[int64]int{}
	leaves := map[int64]map[int]string{}
	for _, id := range ids {
		ev, err := s.st.GetEvidence(ctx, id)
		require.NoError(t, err)
		require.Equal(t, store.StatusConfirmed, ev.Status, id)
		require.Len(t, ev.Anchors, len(s.chains), "evidence %s has one anchor per chain", id)
		for _, a := range ev.Anchors {
			require.Equal(t, store.StatusConfirmed, a.Status, "%s on %s", id, a.Chain)
			if batches[a.Chain] == nil {
				batches[a.Chain] = map[int64]int{}
			}
			batches[a.Chain][a.BatchID]++
			if leaves[a.BatchID] == nil {
				leaves[a.BatchID] = map[int]string{}
			}
			other, dup := leaves[a.BatchID][a.LeafIndex]
			require.False(t, dup, "evidence %s and %s share leaf %d of batch %d", id, other, a.LeafIndex, a.BatchID)
			leaves[a.BatchID][a.LeafIndex] = id
		}
	}
	require.Len(t, batches, len(s.chains))
	for chain, bs := range batches {
		for id, n := range bs {
			b, err := s.st.GetBatch(ctx, id)
			require.NoError(t, err)
			assert.Equal(t, chain, b.Chain)
			assert.Equal(t, store.BatchConfirmed, b.State, "batch %d", id)
			assert.Equal(t, n, b.Size, "batch %d holds exactly its evidence", id)
		}
	}

	rpc, accounts := map[string]string{}, map[string]string{}
	if s.evm != nil {
		rpc[evm.Name], accounts[evm.Name] = s.evm.URL(), s.evmAd.Account()
	}
	if s.sol != nil {
		rpc[solana.Name], accounts[solana.Name] = s.sol.URL(), s.solAd.Account()
	}
	pinned := pinnedTrust(t, s.node.APIAddr(), accounts)
	for _, id := range ids {
		r := receiptFor(t, s.node.APIAddr(), id)
		require.Len(t, r.Anchors, len(s.chains))
		for _, a := range r.Anchors {
			require.NoError(t, r.CheckProof(a), "receipt of %s on %s", id, a.Chain)
		}
		for _, c := range cli.VerifyReceipt(ctx, r, rpc, pinned) {
			assert.True(t, c.OK, "%s on %s: %s", id, c.Chain, c.Failed())
		}
	}

	if s.evm != nil {
		ec, err := ethclient.Dial(s.evm.URL())
		require.NoError(t, err)
		defer ec.Close()
		nonce, err := ec.NonceAt(ctx, s.evmAd.Address(), nil)
		require.NoError(t, err)
		assert.Equal(t, uint64(len(batches[evm.Name])), nonce,
			"the EVM signer's nonce counts every transaction it ever got mined: exactly one per confirmed batch")
		refs := map[string]int64{}
		for b := range batches[evm.Name] {
			got, err := s.st.GetBatch(ctx, b)
			require.NoError(t, err)
			other, dup := refs[got.TxRef]
			require.False(t, dup, "batches %d and %d confirmed by the same transaction", b, other)
			refs[got.TxRef] = b
			rc, err := ec.TransactionReceipt(ctx, common.HexToHash(got.TxRef))
			require.NoError(t, err, "batch %d: receipt of %s", b, got.TxRef)
			assert.Equal(t, uint64(1), rc.Status)
		}
	}
	if s.sol != nil {
		c := solrpc.New(s.sol.URL())
		var paid uint64 // the fees of the landed transactions, priority fees included
		for b := range batches[solana.Name] {
			got, err := s.st.GetBatch(ctx, b)
			require.NoError(t, err)
			refs := s.journal(t, b)
			sigs := make([]sol.Signature, len(refs))
			for i, r := range refs {
				sigs[i] = sol.MustSignatureFromBase58(r)
			}
			res, err := c.GetSignatureStatuses(ctx, true, sigs...)
			require.NoError(t, err)
			var landed []string
			for i, st := range res.Value {
				if st != nil {
					landed = append(landed, refs[i])
					assert.Equal(t, solrpc.ConfirmationStatusFinalized, st.ConfirmationStatus, "batch %d: %s", b, refs[i])
					assert.Nil(t, st.Err, "batch %d: %s", b, refs[i])
				}
			}
			assert.Equal(t, []string{got.TxRef}, landed, "batch %d: one finalized signature, the confirmed one, out of %d signed", b, len(refs))
			maxVersion := uint64(0)
			tx, err := c.GetTransaction(ctx, sol.MustSignatureFromBase58(got.TxRef), &solrpc.GetTransactionOpts{
				Commitment: solrpc.CommitmentConfirmed, MaxSupportedTransactionVersion: &maxVersion})
			require.NoError(t, err, "batch %d: %s", b, got.TxRef)
			require.NotNil(t, tx.Meta)
			assert.GreaterOrEqual(t, tx.Meta.Fee, uint64(solanaFee), "batch %d: the base fee at least", b)
			paid += tx.Meta.Fee
		}
		spent := devnet.DefaultPayerLamports - s.sol.Balance(s.solAd.Payer())
		assert.Equal(t, paid, spent, "the fee payer paid for exactly one landed transaction per batch")
	}
	for chain, bs := range batches {
		t.Logf("%d evidence confirmed once on %s in %d batches", len(ids), chain, len(bs))
	}
}

// explainUnconfirmed logs, for each batch of ids not confirmed yet, where its
// workflow stands: its history's events and its pending activities. It runs
// while a failed test unwinds, so it only logs, never fails.
func (s *faultStack) explainUnconfirmed(t *testing.T, ids []string) {
	t.Helper()
	ctx := context.Background()
	seen := map[string]bool{}
	for _, id := range ids {
		ev, err := s.st.GetEvidence(ctx, id)
		if err != nil {
			t.Logf("evidence %s: %v", id, err)
			continue
		}
		for _, a := range ev.Anchors {
			wid := workflows.WorkflowID(a.Chain, a.BatchID)
			if a.Status == store.StatusConfirmed || seen[wid] {
				continue
			}
			seen[wid] = true
			var events []string
			it := s.node.Client.GetWorkflowHistory(ctx, wid, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
			for it.HasNext() {
				e, err := it.Next()
				if err != nil {
					events = append(events, "history: "+err.Error())
					break
				}
				name := strings.TrimPrefix(e.GetEventType().String(), "EVENT_TYPE_")
				if f := e.GetMarkerRecordedEventAttributes().GetFailure(); f != nil {
					name += fmt.Sprintf("(%s)", f.GetMessage())
				}
				events = append(events, name)
			}
			desc, err := s.node.Client.DescribeWorkflowExecution(ctx, wid, "")
			var pending []string
			if err == nil {
				for _, p := range desc.GetPendingActivities() {
					pending = append(pending, fmt.Sprintf("%s attempt %d state %s last failure %q", p.GetActivityType().GetName(), p.GetAttempt(), p.GetState(), p.GetLastFailure().GetMessage()))
				}
			}
			t.Logf("%s (evidence %s %s): events %v; pending %v; describe error %v", wid, id, a.Status, events, pending, err)
		}
	}
}

// activityStats is what one AnchorBatch history says about its activities.
type activityStats struct {
	scheduled map[string]int   // activity type -> executions scheduled
	attempts  map[string]int32 // activity type -> highest attempt started
}

func (s *faultStack) history(t *testing.T, chain string, batch int64) activityStats {
	t.Helper()
	out := activityStats{scheduled: map[string]int{}, attempts: map[string]int32{}}
	types := map[int64]string{}
	it := s.node.Client.GetWorkflowHistory(context.Background(), workflows.WorkflowID(chain, batch), "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil {
			types[ev.GetEventId()] = a.GetActivityType().GetName()
			out.scheduled[a.GetActivityType().GetName()]++
		}
		if a := ev.GetActivityTaskStartedEventAttributes(); a != nil {
			name := types[a.GetScheduledEventId()]
			out.attempts[name] = max(out.attempts[name], a.GetAttempt())
		}
		// SubmitAnchor and RecordReceipts run as local activities: a marker
		// per outcome, and one per failed attempt retried after a timer
		// (it carries the backoff).
		if m := ev.GetMarkerRecordedEventAttributes(); m.GetMarkerName() == "LocalActivity" {
			var la struct {
				ActivityType string
				Attempt      int32
				Backoff      time.Duration
			}
			require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(m.GetDetails()["data"], &la))
			if la.Backoff == 0 {
				out.scheduled[la.ActivityType]++
			}
			out.attempts[la.ActivityType] = max(out.attempts[la.ActivityType], la.Attempt)
		}
	}
	return out
}

// retriedActivities sums, over the batches, how many activities started
// more than one attempt, and logs the highest attempt of each activity.
func (s *faultStack) retriedActivities(t *testing.T, chain string, batches []int64) int {
	t.Helper()
	retried := 0
	highest := map[string]int32{}
	for _, b := range batches {
		h := s.history(t, chain, b)
		for name, n := range h.attempts {
			highest[name] = max(highest[name], n)
			if n > 1 {
				retried++
			}
		}
	}
	t.Logf("%s: %d activity executions ran more than one attempt in %d AnchorBatch histories; highest attempt %v", chain, retried, len(batches), highest)
	return retried
}

// resubmittedBatches counts the batches whose history submits more than once
// (a dropped transaction sends the workflow back to SubmitAnchor).
func (s *faultStack) resubmittedBatches(t *testing.T, chain string, batches []int64) int {
	t.Helper()
	n := 0
	for _, b := range batches {
		if s.history(t, chain, b).scheduled["SubmitAnchor"] > 1 {
			n++
		}
	}
	return n
}

// metric sums a metric's samples on the stack's /metrics whose labels include chain.
func (s *faultStack) metric(t *testing.T, name, chain string) float64 {
	return scrapeMetric(t, s.node.APIAddr(), name, chain)
}

// scrapeMetric sums a metric's samples on /metrics at apiAddr whose labels
// include chain.
func scrapeMetric(t testing.TB, apiAddr, name, chain string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + apiAddr + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	sum := 0.0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") || !strings.Contains(line, `chain="`+chain+`"`) {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		require.NoError(t, err, line)
		sum += v
	}
	require.NoError(t, sc.Err())
	return sum
}

// checkRetried asserts that the retries show on /metrics and as attempts
// above 1 in the AnchorBatch histories, on every chain of the stack.
func (s *faultStack) checkRetried(t *testing.T, ids []string) {
	t.Helper()
	for _, chain := range s.chains {
		assert.Positive(t, s.metric(t, "keeper_anchor_retries_total", chain), "%s retries on /metrics", chain)
		assert.Positive(t, s.retriedActivities(t, chain, s.batchesOf(t, ids, chain)), "%s: attempt > 1 in some AnchorBatch history", chain)
	}
	s.logMetrics(t)
}

func (s *faultStack) logMetrics(t *testing.T) {
	t.Helper()
	for _, c := range s.chains {
		t.Logf("%s: /metrics keeper_anchor_attempts_total %v, keeper_anchor_retries_total %v, keeper_anchor_dropped_total %v", c,
			s.metric(t, "keeper_anchor_attempts_total", c), s.metric(t, "keeper_anchor_retries_total", c), s.metric(t, "keeper_anchor_dropped_total", c))
	}
}

// lastValid is the lastValidBlockHeight journaled with a Solana transaction.
func lastValid(t *testing.T, st *store.Store, batch int64) uint64 {
	t.Helper()
	recs, err := st.Transactions(context.Background(), batch)
	require.NoError(t, err)
	require.NotEmpty(t, recs)
	var m struct {
		LastValidBlockHeight uint64 `json:"lastValidBlockHeight"`
	}
	require.NoError(t, json.Unmarshal(recs[0].Meta, &m))
	return m.LastValidBlockHeight
}

func TestChainFaultANodeDownForTwoMinutesDelaysEvidenceButConfirmsEachOnce(t *testing.T) {
	endToEnd(t)
	t.Parallel()
	s := startFaultStack(t, faultOptions{evm: true, solana: true, evmProxy: true})
	ids := s.post(t, 0, 8)
	s.waitSubmitted(t, ids[:1], evm.Name)
	s.waitSubmitted(t, ids[:1], solana.Name)

	// The EVM node refuses connections; the Solana node answers every call
	// with HTTP 503. Evidence keeps arriving meanwhile.
	start := time.Now()
	require.NoError(t, s.evmProxy.Down())
	s.sol.InjectFault(devnet.RPCFault{HTTPStatus: http.StatusServiceUnavailable})
	for i := 0; time.Since(start) < 2*time.Minute; i++ {
		if i < 16 && i%2 == 0 {
			ids = append(ids, s.post(t, len(ids), 1)...)
		}
		time.Sleep(5 * time.Second)
	}
	require.NoError(t, s.evmProxy.Up())
	s.sol.ClearFaults()
	t.Logf("both nodes back after %v", time.Since(start).Round(time.Second))

	s.checkExactlyOnce(t, ids, 2*time.Minute)
	t.Logf("all %d evidence confirmed %v after the nodes went down", len(ids), time.Since(start).Round(time.Second))
	s.checkRetried(t, ids)
}

func TestChainFaultADroppedTransactionIsSubmittedAgainAndConfirmsOnce(t *testing.T) {
	endToEnd(t)
	t.Parallel()
	s := startFaultStack(t, faultOptions{evm: true, solana: true})
	// EVM: the node forgets its pool after the anchors reached it. Solana:
	// the node accepts every send and drops it, until the blockhash expired.
	s.evm.PauseMining()
	s.sol.DropNext(1 << 30)
	ids := s.post(t, 0, 16)

	evmBatches := s.waitSubmitted(t, ids, evm.Name)
	dropped := s.evm.DropPending()
	s.evm.ResumeMining()
	t.Logf("etherlink: the node dropped %d pending anchors of %d batches", dropped, len(evmBatches))
	assert.Positive(t, dropped)

	solBatches := s.waitSubmitted(t, ids, solana.Name)
	var expiry uint64
	for _, b := range solBatches {
		expiry = max(expiry, lastValid(t, s.st, b))
	}
	require.Eventually(t, func() bool { return s.sol.BlockHeight() > expiry }, time.Minute, solanaSlotTime)
	s.sol.ClearDrops()

	s.checkExactlyOnce(t, ids, 2*time.Minute)
	assert.Positive(t, s.metric(t, "keeper_anchor_dropped_total", evm.Name))
	assert.GreaterOrEqual(t, s.metric(t, "keeper_anchor_dropped_total", solana.Name), float64(len(solBatches)), "every Solana anchor was found dropped")
	assert.Positive(t, s.resubmittedBatches(t, evm.Name, evmBatches), "some EVM AnchorBatch history submits again")
	assert.Equal(t, len(solBatches), s.resubmittedBatches(t, solana.Name, solBatches), "every Solana AnchorBatch history submits again")
	for _, b := range solBatches {
		assert.GreaterOrEqual(t, len(s.journal(t, b)), 2, "Solana batch %d was signed anew on a fresh blockhash", b)
	}
	s.logMetrics(t)
}

func TestChainFaultAnEVMReorgThatRemovesAnIncludedAnchorIsAnchoredAgainOnce(t *testing.T) {
	endToEnd(t)
	t.Parallel()
	s := startFaultStack(t, faultOptions{evm: true})
	ctx := context.Background()
	s.evm.PauseMining()
	ids := s.post(t, 0, 12)
	batches := s.waitSubmitted(t, ids, evm.Name)

	// Every anchor lands in one block, which keeper sees included but not
	// final (the finalized block is 32 behind, and mining is paused).
	require.NoError(t, s.evm.Mine(1))
	included := s.evm.Head()
	ec, err := ethclient.Dial(s.evm.URL())
	require.NoError(t, err)
	defer ec.Close()
	reorged := map[int64]string{}
	for _, b := range batches {
		got, err := s.st.GetBatch(ctx, b)
		require.NoError(t, err)
		rc, err := ec.TransactionReceipt(ctx, common.HexToHash(got.TxRef))
		require.NoError(t, err, "batch %d", b)
		require.Equal(t, included, rc.BlockNumber.Uint64())
		reorged[b] = got.TxRef
	}
	require.Less(t, s.evm.Finalized(), included)
	time.Sleep(10 * s.cfg.ConfirmPoll) // a few status rounds see the receipts
	for _, b := range batches {
		got, err := s.st.GetBatch(ctx, b)
		require.NoError(t, err)
		require.Equal(t, store.BatchSubmitted, got.State, "batch %d is not confirmed before it is final", b)
	}

	// The block is replaced by two empty ones; its transactions are gone
	// from the chain and from the pool.
	require.NoError(t, s.evm.Reorg(int(s.evm.Head()-included+1), false))
	s.evm.ResumeMining()
	for b, ref := range reorged {
		_, err := ec.TransactionReceipt(ctx, common.HexToHash(ref))
		require.Error(t, err, "batch %d: the reorg removed %s", b, ref)
	}

	s.checkExactlyOnce(t, ids, 2*time.Minute)
	// The head of the line is re-signed; the batches behind it may land with
	// their journaled transactions rebroadcast (docs/anchoring.md, Nonce gaps).
	for b := range reorged {
		got, err := s.st.GetBatch(ctx, b)
		require.NoError(t, err)
		assert.Contains(t, s.journal(t, b), got.TxRef, "batch %d is confirmed by one of its journaled transactions", b)
		rc, err := ec.TransactionReceipt(ctx, common.HexToHash(got.TxRef))
		require.NoError(t, err, "batch %d: its anchor landed again after the reorg", b)
		assert.Greater(t, rc.BlockNumber.Uint64(), included-1, "batch %d", b)
	}
	assert.GreaterOrEqual(t, s.metric(t, "keeper_anchor_dropped_total", evm.Name), float64(len(batches)), "every reorged anchor was found dropped")
	assert.Equal(t, len(batches), s.resubmittedBatches(t, evm.Name, batches), "every AnchorBatch history submits again")
	s.logMetrics(t)
}

func TestChainFaultASolanaBlockhashThatExpiresBeforeInclusionIsSignedAnewOnce(t *testing.T) {
	endToEnd(t)
	t.Parallel()
	s := startFaultStack(t, faultOptions{solana: true})
	// The leader holds every transaction back longer than a blockhash lives
	// (150 blocks): the node keeps them pending until they expire.
	s.sol.DelayInclusion(2 * 150 * solanaSlotTime)
	ids := s.post(t, 0, 12)
	batches := s.waitSubmitted(t, ids, solana.Name)
	var expiry uint64
	first := map[int64]string{}
	for _, b := range batches {
		expiry = max(expiry, lastValid(t, s.st, b))
		first[b] = s.journal(t, b)[0]
	}
	require.Eventually(t, func() bool { return s.sol.BlockHeight() > expiry }, time.Minute, solanaSlotTime)
	s.sol.DelayInclusion(0)

	s.checkExactlyOnce(t, ids, 2*time.Minute)
	for b, sig := range first {
		got, err := s.st.GetBatch(context.Background(), b)
		require.NoError(t, err)
		assert.NotEqual(t, sig, got.TxRef, "batch %d is confirmed by a transaction signed after the first expired", b)
	}
	assert.GreaterOrEqual(t, s.metric(t, "keeper_anchor_dropped_total", solana.Name), float64(len(batches)), "every expired anchor was found dropped")
	assert.Equal(t, len(batches), s.resubmittedBatches(t, solana.Name, batches), "every AnchorBatch history submits again")
	s.logMetrics(t)
}

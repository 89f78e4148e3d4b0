package solana

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sol "github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/chains"
	"github.com/keeperhq/keeper/internal/dev/chaintest"
	"github.com/keeperhq/keeper/internal/dev/devnet"
	"github.com/keeperhq/keeper/internal/retry"
	"github.com/keeperhq/keeper/receipt/verify"
)

func TestAnAnchoredBatchBecomesFinalAndVerifiesWithItsRoot(t *testing.T) {
	chain, payer := startDevnet(t, 10*time.Millisecond)
	a := newAdapter(t, chain.URL(), payer)
	j := chaintest.NewJournal()
	root := rootOf("batch 1")
	ctx := context.Background()

	ref, err := a.Submit(ctx, chains.Anchor{BatchID: 1, Root: root}, j)
	require.NoError(t, err)
	st := waitFor(t, a, 1, j, 10*time.Second)

	require.Equal(t, chains.Final, st.State, st.Detail)
	assert.Equal(t, ref, st.Ref)
	assert.NotZero(t, st.Block)
	assert.False(t, st.BlockTime.IsZero(), "a final anchor has its block time")

	v, err := verify.Solana(ctx, chain.URL(), ref)
	require.NoError(t, err)
	assert.True(t, v.Found)
	assert.True(t, v.Succeeded)
	assert.True(t, v.Final)
	assert.Equal(t, root, v.Root)
	assert.Equal(t, st.Block, v.Block)
	assert.Equal(t, 1, anchorsOnChain(t, chain.URL(), payer.PublicKey(), root))
}

func TestSubmittingTheSameBatchTwiceSendsTheSameTransaction(t *testing.T) {
	chain, payer := startDevnet(t, 10*time.Millisecond)
	a := newAdapter(t, chain.URL(), payer)
	j := chaintest.NewJournal()
	an := chains.Anchor{BatchID: 2, Root: rootOf("batch 2")}

	first, err := a.Submit(context.Background(), an, j)
	require.NoError(t, err)
	second, err := a.Submit(context.Background(), an, j)
	require.NoError(t, err)

	assert.Equal(t, first, second)
	assert.Len(t, j.Records(2), 1, "one journaled transaction")
	waitFor(t, a, 2, j, 10*time.Second)
	assert.Equal(t, 1, anchorsOnChain(t, chain.URL(), payer.PublicKey(), an.Root), "anchored once")
}

func TestACrashBetweenJournalingAndSendingResendsTheSameBytes(t *testing.T) {
	chain, payer := startDevnet(t, 10*time.Millisecond)
	a := newAdapter(t, chain.URL(), payer)
	j := chaintest.NewJournal()
	var crashed atomic.Bool
	j.SetAfterSave(func(chains.TxRecord) error {
		if crashed.CompareAndSwap(false, true) {
			return errors.New("worker crashed after the journal write")
		}
		return nil
	})
	an := chains.Anchor{BatchID: 3, Root: rootOf("batch 3")}

	_, err := a.Submit(context.Background(), an, j)
	require.Error(t, err, "the crash surfaces as an error")
	assert.False(t, retry.IsPermanent(err), "a crash is retried")
	assert.Zero(t, chain.Calls("sendTransaction"), "nothing was sent before the crash")
	journaled := j.Records(3)
	require.Len(t, journaled, 1)

	ref, err := a.Submit(context.Background(), an, j)
	require.NoError(t, err)

	assert.Equal(t, journaled[0].Ref, ref)
	recs := j.Records(3)
	require.Len(t, recs, 1, "the retry signed nothing new")
	assert.Equal(t, journaled[0].Raw, recs[0].Raw)
	assert.Equal(t, chains.Final, waitFor(t, a, 3, j, 10*time.Second).State)
	assert.Equal(t, 1, anchorsOnChain(t, chain.URL(), payer.PublicKey(), an.Root))
}

func TestADroppedSendIsRebroadcastUntilItLands(t *testing.T) {
	chain, payer := startDevnet(t, 10*time.Millisecond)
	a := newAdapter(t, chain.URL(), payer)
	j := chaintest.NewJournal()
	an := chains.Anchor{BatchID: 4, Root: rootOf("batch 4")}
	chain.DropNext(1)

	ref, err := a.Submit(context.Background(), an, j)
	require.NoError(t, err)
	st := waitFor(t, a, 4, j, 10*time.Second)

	assert.Equal(t, chains.Final, st.State, st.Detail)
	assert.Equal(t, ref, st.Ref, "the same transaction landed")
	assert.GreaterOrEqual(t, chain.Calls("sendTransaction"), 2, "it was sent again")
	assert.Len(t, j.Records(4), 1)
}

func TestAnExpiredBlockhashIsDroppedAndSubmitSignsAgainWithAFreshOne(t *testing.T) {
	chain, payer := startDevnet(t, 10*time.Millisecond)
	a := newAdapter(t, chain.URL(), payer)
	j := chaintest.NewJournal()
	an := chains.Anchor{BatchID: 5, Root: rootOf("batch 5")}
	chain.DropNext(1)

	first, err := a.Submit(context.Background(), an, j)
	require.NoError(t, err)
	chain.Advance(expireBlocks) // past lastValidBlockHeight, even finalized; the send was lost

	st := waitFor(t, a, 5, j, 10*time.Second)
	require.Equal(t, chains.Dropped, st.State)
	assert.Equal(t, first, st.Ref)
	assert.Contains(t, st.Detail, "expired")

	second, err := a.Submit(context.Background(), an, j)
	require.NoError(t, err)
	assert.NotEqual(t, first, second, "a new signature")
	recs := j.Records(5)
	require.Len(t, recs, 2)
	var m1, m2 txMeta
	require.NoError(t, json.Unmarshal(recs[0].Meta, &m1))
	require.NoError(t, json.Unmarshal(recs[1].Meta, &m2))
	assert.NotEqual(t, m1.Blockhash, m2.Blockhash, "a fresh blockhash")
	assert.Greater(t, m2.LastValidBlockHeight, m1.LastValidBlockHeight)

	st = waitFor(t, a, 5, j, 10*time.Second)
	assert.Equal(t, chains.Final, st.State)
	assert.Equal(t, second, st.Ref)
	assert.Equal(t, 1, anchorsOnChain(t, chain.URL(), payer.PublicKey(), an.Root), "anchored once")
}

func TestSubmitAfterExpiryReturnsTheSignatureThatLandedInsteadOfSigningAgain(t *testing.T) {
	chain, payer := startDevnet(t, 10*time.Millisecond)
	a := newAdapter(t, chain.URL(), payer)
	j := chaintest.NewJournal()
	an := chains.Anchor{BatchID: 6, Root: rootOf("batch 6")}

	first, err := a.Submit(context.Background(), an, j)
	require.NoError(t, err)
	require.Equal(t, chains.Final, waitFor(t, a, 6, j, 10*time.Second).State)
	chain.Advance(expireBlocks)

	again, err := a.Submit(context.Background(), an, j)
	require.NoError(t, err)
	assert.Equal(t, first, again)
	assert.Len(t, j.Records(6), 1)
}

func TestAnAnchorOlderThanTheStatusCacheIsStillFoundAndNeverSignedTwice(t *testing.T) {
	chain, payer := startDevnet(t, 10*time.Millisecond)
	a := newAdapter(t, chain.URL(), payer)
	j := chaintest.NewJournal()
	an := chains.Anchor{BatchID: 9, Root: rootOf("batch 9")}
	first, err := a.Submit(context.Background(), an, j)
	require.NoError(t, err)
	require.Equal(t, chains.Final, waitFor(t, a, 9, j, 10*time.Second).State)

	// A worker that was down for a long while: the node's recent status
	// cache (300 slots) no longer holds the signature.
	chain.Advance(expireBlocks + devnet.DefaultStatusCacheSlots + 50)

	st := waitFor(t, a, 9, j, 10*time.Second)
	assert.Equal(t, chains.Final, st.State, "not dropped: %s", st.Detail)
	assert.Equal(t, first, st.Ref)
	again, err := a.Submit(context.Background(), an, j)
	require.NoError(t, err)
	assert.Equal(t, first, again)
	assert.Len(t, j.Records(9), 1, "nothing signed twice")
	assert.Equal(t, 1, anchorsOnChain(t, chain.URL(), payer.PublicKey(), an.Root))
}

func TestATransactionThatErrorsOnChainIsFailedWithTheChainsError(t *testing.T) {
	chain, payer := startDevnet(t, 10*time.Millisecond)
	a := newAdapter(t, chain.URL(), payer)
	j := chaintest.NewJournal()
	// A memo that is not UTF-8 fails in the memo program. Journal it as the
	// batch's transaction and get it included past preflight.
	client := rpc.New(chain.URL())
	bh, err := client.GetLatestBlockhash(context.Background(), rpc.CommitmentConfirmed)
	require.NoError(t, err)
	tx, err := sol.NewTransaction([]sol.Instruction{
		sol.NewInstruction(MemoProgramID, sol.AccountMetaSlice{sol.Meta(payer.PublicKey()).SIGNER()}, []byte{0xff, 0xfe, 0xfd}),
	}, bh.Value.Blockhash, sol.TransactionPayer(payer.PublicKey()))
	require.NoError(t, err)
	_, err = tx.Sign(func(sol.PublicKey) *sol.PrivateKey { return &payer })
	require.NoError(t, err)
	raw, err := tx.MarshalBinary()
	require.NoError(t, err)
	meta, _ := json.Marshal(txMeta{Blockhash: bh.Value.Blockhash.String(), LastValidBlockHeight: bh.Value.LastValidBlockHeight})
	ref := tx.Signatures[0].String()
	require.NoError(t, j.SaveTransaction(context.Background(), chains.TxRecord{BatchID: 7, Chain: Name, Ref: ref, Raw: raw, Meta: meta, CreatedAt: time.Now()}))
	_, err = client.SendTransactionWithOpts(context.Background(), tx, rpc.TransactionOpts{SkipPreflight: true})
	require.NoError(t, err)

	st := waitFor(t, a, 7, j, 10*time.Second)

	assert.Equal(t, chains.Failed, st.State)
	assert.Equal(t, ref, st.Ref)
	assert.Contains(t, st.Detail, "InstructionError")

	v, err := verify.Solana(context.Background(), chain.URL(), ref)
	require.NoError(t, err)
	assert.True(t, v.Found)
	assert.False(t, v.Succeeded)
}

func TestAnUnfundedPayerIsARetryableSubmitErrorThatNamesTheCause(t *testing.T) {
	chain, _ := startDevnet(t, 10*time.Millisecond)
	unfunded := newKey(t)
	a := newAdapter(t, chain.URL(), unfunded)

	_, err := a.Submit(context.Background(), chains.Anchor{BatchID: 1, Root: rootOf("no funds")}, chaintest.NewJournal())

	require.Error(t, err)
	assert.False(t, retry.IsPermanent(err), "an unfunded payer can be topped up: retry")
	assert.Contains(t, err.Error(), "AccountNotFound")
}

func TestConfirmedCommitmentIsFinalBeforeFinalizedIs(t *testing.T) {
	chain, payer := startDevnet(t, 10*time.Millisecond)
	chain.Pause()
	fin := newAdapter(t, chain.URL(), payer)
	conf := newAdapter(t, chain.URL(), payer, func(c *Config) { c.Commitment = "confirmed" })
	j := chaintest.NewJournal()

	_, err := fin.Submit(context.Background(), chains.Anchor{BatchID: 8, Root: rootOf("batch 8")}, j)
	require.NoError(t, err)
	chain.Advance(2) // landed in the first slot, confirmed by the second, far from finalized

	stConf, err := conf.Status(context.Background(), 8, j)
	require.NoError(t, err)
	stFin, err := fin.Status(context.Background(), 8, j)
	require.NoError(t, err)

	assert.Equal(t, chains.Final, stConf.State)
	assert.Equal(t, chains.Pending, stFin.State)
}

func TestAThousandAnchorsInFlightNeedAtMostFourStatusCallsPerPollRound(t *testing.T) {
	chain, payer := startDevnet(t, 30*time.Millisecond)
	proxy := newCountingProxy(t, chain.URL())
	a := newAdapter(t, proxy.URL(), payer, func(c *Config) {
		c.PollInterval = 100 * time.Millisecond
		c.RebroadcastInterval = time.Minute // this test counts status calls, not sends
	})
	j := chaintest.NewJournal()
	const n = 1000
	ctx := context.Background()
	chain.Pause() // nothing lands until every anchor is being polled

	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			_, err := a.Submit(ctx, chains.Anchor{BatchID: int64(100 + i), Root: rootOf(fmt.Sprint("bulk ", i))}, j)
			assert.NoError(t, err)
		}()
	}
	wg.Wait()

	// Status answers, as ConfirmAnchor would ask. Each waiter asks again at
	// once: Status itself waits for the pollers' next round, so the waiters'
	// pace is the rounds', whatever the machine's.
	var answers atomic.Int64
	finals := make(chan chains.State, n)
	for i := range n {
		go func() {
			ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			for {
				st, err := a.Status(ctx, int64(100+i), j)
				answers.Add(1)
				if err != nil || st.State != chains.Pending {
					finals <- st.State
					return
				}
			}
		}()
	}
	// Unseen while paused: every waiter needs the block height, one call a round.
	require.Eventually(t, func() bool { return a.heightP.Rounds() >= 3 }, 10*time.Second, 10*time.Millisecond)
	chain.Advance(2) // landed; finalizing for 32 slots
	chain.Resume()
	for range n {
		assert.Equal(t, chains.Final, <-finals)
	}

	rounds, calls := a.StatusRounds(), a.StatusCalls()
	t.Logf("%d anchors: %d Status answers from %d getSignatureStatuses calls (largest %d signatures) in %d poll rounds; %d getBlockHeight calls in %d rounds",
		n, answers.Load(), calls, proxy.maxSignatures(), rounds, a.HeightCalls(), a.heightP.Rounds())
	assert.LessOrEqual(t, calls, 4*rounds, "at most ceil(1000/256) = 4 status calls per round")
	assert.Equal(t, MaxSignaturesPerCall, proxy.maxSignatures(), "calls carry up to 256 signatures")
	assert.Equal(t, int64(proxy.calls("getSignatureStatuses")), calls+a.HistoryCalls(), "every status call went through the pollers")
	assert.GreaterOrEqual(t, answers.Load(), 50*calls, "many Status answers share one call")
	assert.LessOrEqual(t, a.HeightCalls(), a.heightP.Rounds(), "one block height call per round, not per batch")
	assert.Equal(t, int64(proxy.calls("getBlockHeight")), a.HeightCalls())
}

func TestSubmittingAnotherRootForAJournaledBatchIsAPermanentError(t *testing.T) {
	chain, payer := startDevnet(t, 10*time.Millisecond)
	a := newAdapter(t, chain.URL(), payer)
	j := chaintest.NewJournal()
	_, err := a.Submit(context.Background(), chains.Anchor{BatchID: 1, Root: rootOf("a")}, j)
	require.NoError(t, err)

	_, err = a.Submit(context.Background(), chains.Anchor{BatchID: 1, Root: rootOf("b")}, j)

	require.Error(t, err)
	assert.True(t, retry.IsPermanent(err))
	assert.Len(t, j.Records(1), 1)
}

func TestStatusOfABatchWithoutATransactionIsAPermanentError(t *testing.T) {
	chain, payer := startDevnet(t, 10*time.Millisecond)
	a := newAdapter(t, chain.URL(), payer)

	_, err := a.Status(context.Background(), 99, chaintest.NewJournal())

	require.Error(t, err)
	assert.True(t, retry.IsPermanent(err))
}

func TestAnUnreachableNodeIsARetryableErrorThatHidesTheURLsSecrets(t *testing.T) {
	key := newKey(t)
	a := newAdapter(t, "http://127.0.0.1:1/rpc/SECRET-API-KEY?api-key=SECRET", key, func(c *Config) { c.RPCTimeout = time.Second })

	_, err := a.Submit(context.Background(), chains.Anchor{BatchID: 1, Root: rootOf("x")}, chaintest.NewJournal())

	require.Error(t, err)
	assert.False(t, retry.IsPermanent(err), "a down node is retried: %v", err)
	assert.NotContains(t, err.Error(), "SECRET")
	assert.Contains(t, err.Error(), "127.0.0.1:1")
	assert.Error(t, a.Ping(context.Background()))
}

func TestNewRejectsAMissingKeyURLOrWeakCommitmentPermanently(t *testing.T) {
	key := newKey(t)
	for name, cfg := range map[string]Config{
		"no url":          {Payer: key},
		"not http":        {RPCURL: "ftp://node", Payer: key},
		"no key":          {RPCURL: "http://node"},
		"short key":       {RPCURL: "http://node", Payer: key[:32]},
		"processed":       {RPCURL: "http://node", Payer: key, Commitment: "processed"},
		"unknown commit.": {RPCURL: "http://node", Payer: key, Commitment: "max"},
	} {
		_, err := New(cfg)
		require.Error(t, err, name)
		assert.True(t, retry.IsPermanent(err), name)
		assertNoKey(t, err.Error(), key)
	}
}

func TestTheConfigurationDefaultsAreTheDocumentedOnes(t *testing.T) {
	a := newAdapter(t, "http://node", newKey(t), func(c *Config) { *c = Config{RPCURL: c.RPCURL, Payer: c.Payer} })

	assert.Equal(t, "finalized", a.cfg.Commitment)
	assert.Equal(t, 4, a.cfg.RPCConnections)
	assert.Equal(t, time.Second, a.cfg.PollInterval)
	assert.Equal(t, 2*time.Second, a.cfg.RebroadcastInterval)
	assert.Equal(t, 10*time.Second, a.cfg.RPCTimeout)
	assert.Zero(t, a.cfg.PriorityFee)
	assert.Equal(t, Name, a.Name())
}

func TestThePayerKeyNeverAppearsInFormattedConfigLogsOrErrors(t *testing.T) {
	chain, key := startDevnet(t, 10*time.Millisecond)
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg := Config{RPCURL: chain.URL(), Payer: key, Logger: logger, PollInterval: 50 * time.Millisecond, RebroadcastInterval: 50 * time.Millisecond}

	var shown []string
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x"} {
		shown = append(shown, fmt.Sprintf(verb, cfg), fmt.Sprintf(verb, &cfg))
	}
	js, err := json.Marshal(cfg)
	require.NoError(t, err)
	shown = append(shown, string(js))
	logger.Info("config", "solana", cfg)

	a, err := New(cfg)
	require.NoError(t, err)
	defer a.Close()
	for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
		shown = append(shown, fmt.Sprintf(verb, a))
	}
	// Error and log paths: a dropped, then expired transaction; a failed one;
	// a rejected send; a permanent status error.
	j := chaintest.NewJournal()
	chain.DropNext(1)
	_, err = a.Submit(context.Background(), chains.Anchor{BatchID: 1, Root: rootOf("k1")}, j)
	require.NoError(t, err)
	chain.Advance(expireBlocks)
	waitFor(t, a, 1, j, 10*time.Second)
	_, err = a.Submit(context.Background(), chains.Anchor{BatchID: 1, Root: rootOf("k1")}, j)
	require.NoError(t, err)
	chain.FailRPC("sendTransaction", 1)
	_, err = a.Submit(context.Background(), chains.Anchor{BatchID: 2, Root: rootOf("k2")}, j)
	require.Error(t, err)
	shown = append(shown, err.Error())
	_, err = a.Status(context.Background(), 3, j)
	shown = append(shown, err.Error())

	shown = append(shown, logs.String())
	require.Contains(t, logs.String(), "re-signing", "the log paths ran")
	for _, s := range shown {
		assertNoKey(t, s, key)
	}
	assert.Contains(t, fmt.Sprint(cfg), key.PublicKey().String(), "the public key is fine to show")
}

func TestAFailingStatusLookupIsRetryableAndTheNextPollRecovers(t *testing.T) {
	chain, payer := startDevnet(t, 10*time.Millisecond)
	a := newAdapter(t, chain.URL(), payer)
	j := chaintest.NewJournal()
	_, err := a.Submit(context.Background(), chains.Anchor{BatchID: 1, Root: rootOf("flaky")}, j)
	require.NoError(t, err)

	chain.FailHTTP("getSignatureStatuses", 1, http.StatusServiceUnavailable)
	_, err = a.Status(context.Background(), 1, j)
	require.Error(t, err)
	assert.False(t, retry.IsPermanent(err))

	assert.Equal(t, chains.Final, waitFor(t, a, 1, j, 10*time.Second).State)
}

func TestATransientSendFailureIsRetriedWithTheSameTransaction(t *testing.T) {
	chain, payer := startDevnet(t, 10*time.Millisecond)
	a := newAdapter(t, chain.URL(), payer)
	j := chaintest.NewJournal()
	an := chains.Anchor{BatchID: 1, Root: rootOf("send fails once")}
	chain.FailRPC("sendTransaction", 1)

	_, err := a.Submit(context.Background(), an, j)
	require.Error(t, err)
	assert.False(t, retry.IsPermanent(err), "%v", err)
	ref, err := a.Submit(context.Background(), an, j)
	require.NoError(t, err)

	assert.Len(t, j.Records(1), 1)
	assert.Equal(t, ref, waitFor(t, a, 1, j, 10*time.Second).Ref)
}

func TestPingAnswersWhileTheNodeIsHealthy(t *testing.T) {
	chain, payer := startDevnet(t, 10*time.Millisecond)
	a := newAdapter(t, chain.URL(), payer)

	require.NoError(t, a.Ping(context.Background()))
	chain.FailRPC("getHealth", 1)
	assert.Error(t, a.Ping(context.Background()))
}

func TestVerifyingAnUnknownSignatureSaysNotFound(t *testing.T) {
	chain, _ := startDevnet(t, 10*time.Millisecond)
	var sig sol.Signature
	sig[0] = 1

	v, err := verify.Solana(context.Background(), chain.URL(), sig.String())

	require.NoError(t, err)
	assert.False(t, v.Found)
	assert.NotEmpty(t, v.Detail)
	_, err = verify.Solana(context.Background(), chain.URL(), "not-a-signature")
	assert.Error(t, err)
}

func TestANodeThatAnswersFewerStatusesThanAskedIsAnErrorNotPending(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID json.RawMessage `json:"id"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"context":{"slot":1},"value":[]}}`, req.ID)
	}))
	defer srv.Close()
	payer := newKey(t)
	a := newAdapter(t, srv.URL, payer)
	j := chaintest.NewJournal()
	_, raw, err := BuildAnchorTx(payer, Memo(rootOf("x")), sol.Hash{1}, 0)
	require.NoError(t, err)
	wire, err := sol.TransactionFromBytes(raw)
	require.NoError(t, err)
	require.NoError(t, j.SaveTransaction(context.Background(), chains.TxRecord{
		BatchID: 1, Chain: Name, Ref: wire.Signatures[0].String(), Raw: raw,
		Meta: json.RawMessage(`{"blockhash":"` + sol.Hash{1}.String() + `","lastValidBlockHeight":500}`),
	}))

	_, err = a.Status(context.Background(), 1, j)

	require.Error(t, err)
	assert.Contains(t, err.Error(), "0 statuses for 1 signatures")
}

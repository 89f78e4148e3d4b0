package evmscan_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/backfill/evmscan"
	"github.com/keeperhq/keeper/internal/backfill/scan"
	"github.com/keeperhq/keeper/internal/dev/devchain"
	"github.com/keeperhq/keeper/internal/dev/testchain"
	"github.com/keeperhq/keeper/internal/retry"
)

func startChain(t *testing.T) *devchain.Chain {
	t.Helper()
	c, err := devchain.Start(context.Background(), devchain.Options{Dir: t.TempDir(), BlockTime: time.Hour, FinalityDepth: 4})
	require.NoError(t, err)
	t.Cleanup(func() { c.Stop() })
	return c
}

func scanner(t *testing.T, url string, chunk int) *evmscan.Scanner {
	t.Helper()
	s, err := evmscan.New(context.Background(), evmscan.Config{Network: "etherlink", RPCURL: url, ChunkBlocks: chunk})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return s
}

// scanAll runs a whole scan and returns its transfers and chunks.
func scanAll(t *testing.T, s *evmscan.Scanner, job scan.Job) ([]scan.Transfer, []scan.Chunk) {
	t.Helper()
	var (
		all    []scan.Transfer
		chunks []scan.Chunk
	)
	require.NoError(t, s.Scan(context.Background(), job, func(c scan.Chunk) error {
		all = append(all, c.Transfers...)
		chunks = append(chunks, c)
		return nil
	}))
	return all, chunks
}

func key(tx string, kind scan.Kind, asset string) string {
	return tx + "/" + string(kind) + "/" + asset
}

func TestScanFindsExactlyTheWalletsNativeAndTokenTransfersAndItsFees(t *testing.T) {
	c := startChain(t)
	h, err := testchain.BuildEVMHistory(context.Background(), c, testchain.EVMOptions{Rounds: 12, BlocksPerRound: 9})
	require.NoError(t, err)
	s := scanner(t, c.URL(), 25)
	fin, err := s.Finalized(context.Background())
	require.NoError(t, err)
	require.GreaterOrEqual(t, fin, h.Head)

	all, chunks := scanAll(t, s, scan.Job{Wallet: strings.ToLower(h.Wallet.Hex()), Start: 0, Target: fin})
	want := map[string]testchain.Expected{}
	for _, e := range h.Expected {
		want[key(e.Tx, e.Kind, e.Asset)] = e
	}
	got := map[string]scan.Transfer{}
	fees := map[string]bool{}
	for _, tr := range all {
		if tr.Kind == scan.KindFee {
			assert.Equal(t, scan.Out, tr.Direction)
			fees[tr.Tx] = true
			continue
		}
		k := key(tr.Tx, tr.Kind, tr.Asset)
		require.NotContains(t, got, k, "each transfer is reported once")
		got[k] = tr
	}
	require.Len(t, got, len(want))
	for k, e := range want {
		tr, ok := got[k]
		if !assert.True(t, ok, "missing %s", k) {
			continue
		}
		assert.Equal(t, 0, e.Amount.Cmp(tr.Amount), "%s amount", k)
		assert.Equal(t, e.From, tr.From, k)
		assert.Equal(t, e.To, tr.To, k)
		assert.Equal(t, e.Direction, tr.Direction, k)
		assert.False(t, tr.BlockTime.IsZero())
	}
	assert.Len(t, fees, len(h.Sent), "every transaction the wallet signed paid a fee, the reverted one too")

	last := chunks[len(chunks)-1]
	assert.Equal(t, fin+1, last.Cursor.Block)
	assert.Equal(t, last.Total, last.Scanned)
	assert.Equal(t, fin+1, last.Total)

	// The transfers add up to what the chain says the wallet holds.
	bal := map[string]*big.Int{}
	for _, tr := range all {
		if bal[tr.Asset] == nil {
			bal[tr.Asset] = new(big.Int)
		}
		switch tr.Direction {
		case scan.In:
			bal[tr.Asset].Add(bal[tr.Asset], tr.Amount)
		case scan.Out:
			bal[tr.Asset].Sub(bal[tr.Asset], tr.Amount)
		}
	}
	token := strings.ToLower(h.Token.Hex())
	hold, err := s.Holdings(context.Background(), strings.ToLower(h.Wallet.Hex()), fin, []string{scan.NativeAsset, token})
	require.NoError(t, err)
	require.True(t, hold[0].Known && hold[1].Known)
	assert.Equal(t, hold[0].Amount.String(), bal[scan.NativeAsset].String())
	assert.Equal(t, hold[1].Amount.String(), bal[token].String())
}

func TestScanResumesFromTheCursorWithoutRepeatingBlocks(t *testing.T) {
	c := startChain(t)
	h, err := testchain.BuildEVMHistory(context.Background(), c, testchain.EVMOptions{Rounds: 6, BlocksPerRound: 10})
	require.NoError(t, err)
	s := scanner(t, c.URL(), 10)
	wallet := strings.ToLower(h.Wallet.Hex())
	fin := c.Finalized()
	whole, _ := scanAll(t, s, scan.Job{Wallet: wallet, Target: fin})

	var first []scan.Transfer
	var cur scan.Cursor
	stop := fmt.Errorf("stop")
	err = s.Scan(context.Background(), scan.Job{Wallet: wallet, Target: fin}, func(ch scan.Chunk) error {
		first = append(first, ch.Transfers...)
		cur = ch.Cursor
		if ch.Cursor.Block > fin/2 {
			return stop
		}
		return nil
	})
	require.ErrorIs(t, err, stop)
	rest, chunks := scanAll(t, s, scan.Job{Wallet: wallet, Target: fin, From: cur, Scanned: cur.Block})
	assert.Equal(t, len(whole), len(first)+len(rest))
	assert.Equal(t, cur.Block+10, chunks[0].Scanned, "progress continues from the cursor")
}

func TestAddressesAreCheckedAndLowerCased(t *testing.T) {
	got, err := evmscan.ParseAddress("0x52908400098527886E0F7030069857D2E4169EE7")
	require.NoError(t, err)
	assert.Equal(t, "0x52908400098527886e0f7030069857d2e4169ee7", got)
	_, err = evmscan.ParseAddress("0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed")
	require.NoError(t, err, "a valid EIP-55 checksum")
	for _, bad := range []string{"", "0x123", "5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed", "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeD", "0xzz0000000000000000000000000000000000000z", "9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin"} {
		_, err := evmscan.ParseAddress(bad)
		assert.True(t, retry.IsPermanent(err), "%q: %v", bad, err)
	}
}

// limitingProxy forwards JSON-RPC to url but refuses eth_getLogs over more
// than maxRange blocks the way geth-based providers do.
func limitingProxy(t *testing.T, target string, maxRange uint64) (string, *atomic.Int64) {
	t.Helper()
	var refused atomic.Int64
	u, err := url.Parse(target)
	require.NoError(t, err)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct {
			ID     json.RawMessage   `json:"id"`
			Method string            `json:"method"`
			Params []json.RawMessage `json:"params"`
		}
		if json.Unmarshal(body, &req) == nil && req.Method == "eth_getLogs" {
			var f struct{ FromBlock, ToBlock hexutil.Uint64 }
			require.NoError(t, json.Unmarshal(req.Params[0], &f))
			if f.ToBlock-f.FromBlock+1 > hexutil.Uint64(maxRange) {
				refused.Add(1)
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32005,"message":"query returned more than 10000 results"}}`, req.ID)
				return
			}
		}
		resp, err := http.Post(u.String(), "application/json", bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.Header().Set("Content-Type", "application/json")
		io.Copy(w, resp.Body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, &refused
}

func TestLogRangesTheNodeRefusesAreSplitUntilItAnswers(t *testing.T) {
	c := startChain(t)
	h, err := testchain.BuildEVMHistory(context.Background(), c, testchain.EVMOptions{Rounds: 5, BlocksPerRound: 12})
	require.NoError(t, err)
	wallet := strings.ToLower(h.Wallet.Hex())
	direct, _ := scanAll(t, scanner(t, c.URL(), 100), scan.Job{Wallet: wallet, Target: c.Finalized()})

	proxy, refused := limitingProxy(t, c.URL(), 7)
	split, _ := scanAll(t, scanner(t, proxy, 100), scan.Job{Wallet: wallet, Target: c.Finalized()})
	assert.Positive(t, refused.Load(), "the node refused the larger ranges")
	assert.ElementsMatch(t, direct, split, "splitting finds the same transfers")
}

func TestHoldingsOfPrunedStateAreUnknownNotWrong(t *testing.T) {
	c := startChain(t)
	require.NoError(t, c.Mine(300))
	s := scanner(t, c.URL(), 100)
	hold, err := s.Holdings(context.Background(), strings.ToLower(c.Address().Hex()), 1, []string{scan.NativeAsset})
	require.NoError(t, err)
	assert.False(t, hold[0].Known)
	assert.Contains(t, hold[0].Detail, "state of block 1")

	hold, err = s.Holdings(context.Background(), strings.ToLower(c.Address().Hex()), c.Head(), []string{scan.NativeAsset, strings.ToLower(common.Address{1}.Hex())})
	require.NoError(t, err)
	assert.True(t, hold[0].Known)
	assert.Equal(t, devchain.DevBalance.String(), hold[0].Amount.String())
	assert.False(t, hold[1].Known, "an address that is not a token has no balanceOf")
}

// truncatingProxy forwards JSON-RPC to target but cuts every eth_getLogs
// answer to its first maxLogs entries without saying so, as a public
// endpoint with a cap on logs per answer may (EtherLink's: 5,000).
func truncatingProxy(t *testing.T, target string, maxLogs int) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct{ Method string }
		_ = json.Unmarshal(body, &req)
		resp, err := http.Post(target, "application/json", bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		answer, _ := io.ReadAll(resp.Body)
		if req.Method == "eth_getLogs" {
			var a map[string]json.RawMessage
			var logs []json.RawMessage
			if json.Unmarshal(answer, &a) == nil && json.Unmarshal(a["result"], &logs) == nil && len(logs) > maxLogs {
				a["result"], _ = json.Marshal(logs[:maxLogs])
				answer, _ = json.Marshal(a)
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(answer)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestAnAnswerOfMaxLogsIsTakenAsTruncatedSoAnEndpointsLogCapLosesNothing(t *testing.T) {
	c := startChain(t)
	h, err := testchain.BuildEVMHistory(context.Background(), c, testchain.EVMOptions{Rounds: 5, BlocksPerRound: 12})
	require.NoError(t, err)
	wallet := strings.ToLower(h.Wallet.Hex())
	job := scan.Job{Wallet: wallet, Target: c.Finalized()}
	direct, _ := scanAll(t, scanner(t, c.URL(), 100), job)

	const endpointCap = 2 // EtherLink's public endpoint: 5,000, the etherlink presets' MaxLogs
	capped := truncatingProxy(t, c.URL(), endpointCap)
	atCap, err := evmscan.New(context.Background(), evmscan.Config{Network: "etherlink", RPCURL: capped, ChunkBlocks: 100, MaxLogs: endpointCap})
	require.NoError(t, err)
	t.Cleanup(atCap.Close)
	got, _ := scanAll(t, atCap, job)
	assert.ElementsMatch(t, direct, got, "MaxLogs at the endpoint's cap: every full answer is split, nothing is lost")

	aboveCap := scanner(t, capped, 100) // the default MaxLogs, 10,000
	lost, _ := scanAll(t, aboveCap, job)
	assert.Less(t, len(lost), len(direct), "MaxLogs above the cap takes a truncated answer as whole")
}

// balanceNode answers eth_getBalance batches the way anvil does: the
// wallet's balance at the blocks whose state it keeps, oldest to height,
// and for any other the error anvil gives. It records the blocks asked for.
func balanceNode(t *testing.T, oldest, height uint64, balance *big.Int) (string, *[]uint64) {
	t.Helper()
	var asked []uint64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var batch []struct {
			ID     json.RawMessage   `json:"id"`
			Method string            `json:"method"`
			Params []json.RawMessage `json:"params"`
		}
		require.NoError(t, json.NewDecoder(r.Body).Decode(&batch))
		var out []string
		for _, c := range batch {
			require.Equal(t, "eth_getBalance", c.Method)
			var at hexutil.Uint64
			require.NoError(t, json.Unmarshal(c.Params[1], &at))
			asked = append(asked, uint64(at))
			if uint64(at) < oldest || uint64(at) > height {
				out = append(out, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32602,"message":"BlockOutOfRangeError: block height is %d but requested was %d"}}`, c.ID, height, at))
				continue
			}
			out = append(out, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":"%s"}`, c.ID, hexutil.EncodeBig(balance)))
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, "["+strings.Join(out, ",")+"]")
	}))
	t.Cleanup(srv.Close)
	return srv.URL, &asked
}

// The measured failure: anvil, like other non-archive nodes, does not keep
// the state of old blocks and says so in its own words.
func TestAnvilsBlockOutOfRangeIsStateTheNodeNoLongerHasNotAFailure(t *testing.T) {
	node, _ := balanceNode(t, 8900, 9069, big.NewInt(5))
	s := scanner(t, node, 100)
	wallet := strings.ToLower(common.Address{7}.Hex())
	hold, err := s.Holdings(context.Background(), wallet, 0, []string{scan.NativeAsset})
	require.NoError(t, err)
	assert.False(t, hold[0].Known)
	assert.True(t, hold[0].Pruned)
	assert.Equal(t, "no state of block 0: BlockOutOfRangeError: block height is 9069 but requested was 0", hold[0].Detail)

	// A block above the node's height is one it has not seen yet (a node
	// behind the others): worth a retry, not taken as pruned.
	behind, _ := balanceNode(t, 0, 100, big.NewInt(5))
	_, err = scanner(t, behind, 100).Holdings(context.Background(), wallet, 120, []string{scan.NativeAsset})
	require.ErrorContains(t, err, "block height is 100 but requested was 120")
	assert.False(t, retry.IsPermanent(err))
}

func TestBalancesOfStateTheNodeNoLongerHasAreReadFromTheArchiveEndpointAlone(t *testing.T) {
	node, nodeAsked := balanceNode(t, 8900, 9069, big.NewInt(5))
	archive, archiveAsked := balanceNode(t, 0, 9069, big.NewInt(10_000))
	s, err := evmscan.New(context.Background(), evmscan.Config{Network: "etherlink", RPCURL: node, ArchiveURL: archive})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	wallet := strings.ToLower(common.Address{7}.Hex())

	hold, err := s.Holdings(context.Background(), wallet, 0, []string{scan.NativeAsset})
	require.NoError(t, err)
	require.True(t, hold[0].Known)
	assert.Equal(t, "10000", hold[0].Amount.String(), "the archive's answer")
	hold, err = s.Holdings(context.Background(), wallet, 9069, []string{scan.NativeAsset})
	require.NoError(t, err)
	assert.Equal(t, "5", hold[0].Amount.String(), "the node's answer")
	assert.Equal(t, []uint64{0, 9069}, *nodeAsked)
	assert.Equal(t, []uint64{0}, *archiveAsked, "the archive is asked only what the node has not got")
}

func TestAnArchiveEndpointWithoutTheStateIsAPermanentErrorNamingItsSetting(t *testing.T) {
	node, _ := balanceNode(t, 8900, 9069, big.NewInt(5))
	notArchive, _ := balanceNode(t, 8000, 9000, big.NewInt(5))
	s, err := evmscan.New(context.Background(), evmscan.Config{Network: "etherlink", RPCURL: node, ArchiveURL: notArchive + "/v2/KEY-A"})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	_, err = s.Holdings(context.Background(), strings.ToLower(common.Address{7}.Hex()), 0, []string{scan.NativeAsset})
	require.Error(t, err)
	assert.True(t, retry.IsPermanent(err), "no retry makes it an archive node")
	assert.Equal(t, "etherlink: the wallet's balances at block 0 are in neither the node's state nor that of the archive endpoint "+
		"KEEPER_EVM_ARCHIVE_RPC_URL (no state of block 0: BlockOutOfRangeError: block height is 9000 but requested was 0): "+
		"set KEEPER_EVM_ARCHIVE_RPC_URL to an archive node of this chain, one that keeps every block's state", err.Error())
}

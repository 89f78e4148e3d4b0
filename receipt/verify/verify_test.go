package verify_test

import (
	"context"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/evlog/trust"
	"github.com/keeperhq/keeper/receipt"
	"github.com/keeperhq/keeper/receipt/verify"
)

func TestAReceiptVerifiesOnlyAgainstItsOwnNetworkBlockAndFile(t *testing.T) {
	const file = "minutes of the meeting"
	raw, url, account, stop, err := anchorOnLocalChain(file)
	require.NoError(t, err)
	defer stop()
	rootJSON, err := preLogTrust(raw, account)
	require.NoError(t, err)
	root, err := trust.Parse(rootJSON)
	require.NoError(t, err)
	rpc := verify.Options{RPC: map[string]string{"etherlink": url}, Trust: &root}
	ctx := context.Background()
	genuine := func() receipt.Receipt {
		r, err := receipt.Parse(raw)
		require.NoError(t, err)
		return r
	}

	r := genuine()
	require.NoError(t, verify.File(r, strings.NewReader(file)))
	res := verify.Receipt(ctx, r, rpc)
	require.Len(t, res, 1)
	require.True(t, res[0].OK, res[0].Failed())
	assert.Equal(t, receipt.LocalEVMNetwork, res[0].Network)

	// The same batch anchor under the short form, which says not when the
	// log began, or under a root whose log began before its block, does
	// not count: a leaked key could mint such receipts forever.
	res = verify.Receipt(ctx, r, verify.Options{RPC: rpc.RPC, Accounts: []string{"etherlink=" + account}})
	assert.Equal(t, verify.CheckBatch, res[0].Check, res[0].Failed())
	early := root
	early.Log.ValidFor.Start = r.Anchors[0].BlockTime
	res = verify.Receipt(ctx, r, verify.Options{RPC: rpc.RPC, Trust: &early})
	assert.Equal(t, verify.CheckBatch, res[0].Check, res[0].Failed())

	err = verify.File(r, strings.NewReader(file+"."))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "digest: the file hashes to")

	cases := map[string]struct {
		tamper func(*receipt.Receipt)
		check  string
	}{
		"a receipt naming another network": {func(r *receipt.Receipt) { r.Anchors[0].Network = "eip155:127823" }, verify.CheckNetwork},
		"a flipped bit in the path": {func(r *receipt.Receipt) {
			b, _ := hex.DecodeString(r.Anchors[0].Path[0])
			b[31] ^= 1
			r.Anchors[0].Path[0] = hex.EncodeToString(b)
		}, verify.CheckProof},
		"another block hash":     {func(r *receipt.Receipt) { r.Anchors[0].BlockHash = "0x" + strings.Repeat("ab", 32) }, verify.CheckBlock},
		"another transaction":    {func(r *receipt.Receipt) { r.Anchors[0].TxRef = "0x" + strings.Repeat("cd", 32) }, verify.CheckTransaction},
		"a chain nobody can ask": {func(r *receipt.Receipt) { r.Anchors[0].Chain = "stub" }, verify.CheckChain},
		"another block time":     {func(r *receipt.Receipt) { r.Anchors[0].BlockTime = r.Anchors[0].BlockTime.Add(-time.Second) }, verify.CheckTime},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			r := genuine()
			c.tamper(&r)
			res := verify.Receipt(ctx, r, rpc)
			require.Len(t, res, 1)
			assert.False(t, res[0].OK)
			assert.Equal(t, c.check, res[0].Check, res[0].Failed())
		})
	}

	// A version 2 receipt names no account: the pinned one decides.
	other := rpc
	notListed := root
	notListed.Accounts = nil
	notListed.List("etherlink", receipt.LocalEVMNetwork, "0x000000000000000000000000000000000000dEaD", 0, time.Time{})
	other.Trust = &notListed
	res = verify.Receipt(ctx, genuine(), other)
	assert.Equal(t, verify.CheckAccount, res[0].Check, res[0].Failed())
	res = verify.Receipt(ctx, genuine(), verify.Options{RPC: rpc.RPC})
	assert.Equal(t, verify.CheckTrust, res[0].Check, res[0].Failed())

	// The node's answer about another network wins over an endpoint that
	// cannot be reached: a wrong URL says so.
	down := verify.Receipt(ctx, genuine(), verify.Options{RPC: map[string]string{"etherlink": "http://127.0.0.1:1/?apikey=secret"}, Trust: &root})
	assert.Equal(t, verify.CheckTransaction, down[0].Check)
	assert.NotContains(t, down[0].Reason, "secret", "an endpoint's API key stays out of the reason")
}

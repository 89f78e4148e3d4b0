package node_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/receipt"
	"github.com/keeperhq/keeper/receipt/verify"
)

// TestGoldenPathAPostedEvidenceGetsAReceiptThatVerifiesOnTheChainsAndAForgedOneDoesNot
// walks what a user of keeper dev does: post a file's digest, wait until it
// is confirmed, fetch its receipt and hand it to the public verifier,
// which pins the log's key and the node's anchoring accounts and asks both
// local chains. The genuine receipt verifies; the same receipt with one
// anchor's block time moved by a second does not, nor does the genuine one
// against another log's key.
func TestGoldenPathAPostedEvidenceGetsAReceiptThatVerifiesOnTheChainsAndAForgedOneDoesNot(t *testing.T) {
	d := sharedKeeperDev(t)
	const file = "the golden path, as signed"
	digest := sha256.Sum256([]byte(file))
	id := d.postConfirmed(t, `{"digest":"`+hex.EncodeToString(digest[:])+`","chains":["etherlink","solana"]}`)

	resp, err := http.Get(d.Base + "/v1/evidence/" + id + "/receipt")
	require.NoError(t, err)
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	genuine, err := receipt.Parse(raw)
	require.NoError(t, err)
	require.NotNil(t, genuine.Log, "a version %d receipt", genuine.Version)
	require.NoError(t, verify.File(genuine, strings.NewReader(file)), "the receipt is for the posted file")

	pinned := verify.Options{
		RPC:    map[string]string{"etherlink": d.EVM.URL(), "solana": d.Solana.URL()},
		LogKey: d.LogKey,
		Accounts: []string{
			"etherlink=" + d.EVM.Address().Hex(),
			"solana=" + d.Solana.Payer().PublicKey().String(),
		},
		Clocks:  []string{"etherlink", "solana"}, // the local chains are test networks: their clocks count only when trusted
		Timeout: 10 * time.Second,
	}
	ctx := context.Background()

	report := verify.Check(ctx, genuine, pinned)
	require.Len(t, report.Results, 2, "one result per anchor")
	for _, res := range report.Results {
		assert.True(t, res.OK, "%s: %s", res.Chain, res.Failed())
	}
	assert.True(t, report.OK)
	assert.Equal(t, d.LogKey, report.Key, "checked against the pinned key")
	assert.Len(t, report.Networks, 2)
	assert.True(t, report.ExistedBy.Equal(genuine.ExistedBy), "existed_by %s, proved %s", genuine.ExistedBy, report.ExistedBy)

	forged, err := receipt.Parse(raw)
	require.NoError(t, err)
	forged.Anchors[0].BlockTime = forged.Anchors[0].BlockTime.Add(time.Second)
	report = verify.Check(ctx, forged, pinned)
	assert.False(t, report.OK, "a receipt whose block_time moved by 1 s")
	require.Len(t, report.Results, 2)
	assert.Equal(t, verify.CheckTime, report.Results[0].Check, "%s: %s", report.Results[0].Chain, report.Results[0].Failed())

	_, otherKey, err := evlog.GenerateKey(genuine.Log.Origin)
	require.NoError(t, err)
	otherLog := pinned
	otherLog.LogKey = otherKey
	report = verify.Check(ctx, genuine, otherLog)
	assert.False(t, report.OK, "the genuine receipt against another log's key")
	for _, res := range report.Results {
		assert.Equal(t, verify.CheckCheckpoint, res.Check, "%s: %s", res.Chain, res.Failed())
	}
}

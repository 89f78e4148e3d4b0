package evm_test

import (
	"context"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/chains"
	"github.com/keeperhq/keeper/internal/chains/evm"
	"github.com/keeperhq/keeper/internal/dev/chaintest"
	"github.com/keeperhq/keeper/internal/dev/devchain"
)

// Two adapters stand for two worker processes sharing one signer: with a
// shared NonceFile their transactions get consecutive nonces, none reused.
func TestTwoWorkersSharingASignerThroughANonceFileNeverReuseANonce(t *testing.T) {
	c := startChain(t, devchain.Options{})
	nonceFile := filepath.Join(t.TempDir(), "signer.nonce")
	withFile := func(cfg *evm.Config) { cfg.NonceFile = nonceFile }
	a1, _ := newAdapter(t, c, withFile)
	a2, _ := newAdapter(t, c, withFile)
	ec := client(t, c.URL())
	ctx := context.Background()
	j := chaintest.NewJournal() // the shared store
	start := latestNonce(t, ec, a1.Address())

	const n = 40
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		a := a1
		if i%2 == 1 {
			a = a2
		}
		wg.Go(func() {
			if _, err := a.Submit(ctx, chains.Anchor{BatchID: int64(500 + i), Root: randomRoot(t)}, j); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	var nonces []uint64
	for i := range n {
		recs := j.Records(int64(500 + i))
		require.Len(t, recs, 1)
		nonces = append(nonces, decodeTx(t, recs[0].Raw).Nonce())
	}
	sort.Slice(nonces, func(x, y int) bool { return nonces[x] < nonces[y] })
	for i, got := range nonces {
		require.Equal(t, start+uint64(i), got, "consecutive nonces across both workers: %v", nonces)
	}
	var fin sync.WaitGroup
	for i := range n {
		fin.Go(func() { waitState(t, a1, j, int64(500+i), chains.Final, 20*time.Second) })
	}
	fin.Wait()
	assert.Equal(t, start+n, latestNonce(t, ec, a1.Address()))
}

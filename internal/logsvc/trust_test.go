package logsvc_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/evlog/trust"
	"github.com/keeperhq/keeper/internal/logsvc"
)

const (
	evmNet = "eip155:128123"
	solNet = "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1"
	evmOne = "0xaaaa000000000000000000000000000000000001"
	evmTwo = "0xbbbb000000000000000000000000000000000002"
	solOne = "9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin"
)

func TestAWorkersAccountsAreListedInTheTrustRootWhichOnlyARetirementCloses(t *testing.T) {
	ctx := context.Background()
	l := newTestLog(t)
	at := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	both := []logsvc.Account{{Chain: "etherlink", Network: evmNet, Address: evmOne}, {Chain: "solana", Network: solNet, Address: solOne}}
	first, err := logsvc.ListAccounts(ctx, l.st, l.signer, both, at)
	require.NoError(t, err)
	assert.EqualValues(t, 1, first.Version)

	l.grow(t, 40)
	again, err := logsvc.ListAccounts(ctx, l.st, l.signer, both, at.Add(time.Hour))
	require.NoError(t, err)
	assert.EqualValues(t, 1, again.Version, "a restart with the same accounts changes nothing")

	// A second worker with an EVM key of its own starts after the checkpoint
	// of 40 entries: both accounts anchor from then on.
	rotated, err := logsvc.ListAccounts(ctx, l.st, l.signer, []logsvc.Account{{Chain: "etherlink", Network: evmNet, Address: evmTwo}, both[1]}, at.Add(2*time.Hour))
	require.NoError(t, err)
	assert.EqualValues(t, 2, rotated.Version)
	r := rotated.Root
	for _, c := range []struct {
		addr string
		size int64
		ok   bool
	}{{evmOne, 0, true}, {evmOne, 40, true}, {evmOne, 41, true}, {evmTwo, 40, false}, {evmTwo, 41, true}} {
		ok, why := r.Allows("etherlink", evmNet, c.addr, c.size)
		assert.Equal(t, c.ok, ok, "%s at %d: %s", c.addr, c.size, why)
	}

	// The operator retires the first key; a worker still holding it is refused.
	_, err = l.st.UpdateTrustRoot(ctx, func(prev trust.Root, _ bool) (trust.Root, []byte, error) {
		prev.Accounts = append([]trust.Account(nil), prev.Accounts...)
		require.NoError(t, prev.Retire(trust.CAIP10(evmNet, evmOne), 41, at.Add(3*time.Hour)))
		note, err := trust.Sign(prev, l.signer)
		return prev, note, err
	})
	require.NoError(t, err)
	_, err = logsvc.ListAccounts(ctx, l.st, l.signer, both, at.Add(4*time.Hour))
	require.ErrorContains(t, err, "was retired")
	latest, err := l.st.TrustRoot(ctx)
	require.NoError(t, err)
	r = latest.Root
	ok, _ := r.Allows("etherlink", evmNet, evmOne, 41)
	assert.False(t, ok, "a retired key's anchor of a later checkpoint does not verify")
	ok, _ = r.Allows("solana", solNet, solOne, 1000)
	assert.True(t, ok, "the Solana account stays open")

	// /log/trust serves it signed by the log's key; an export writes it.
	srv := httptest.NewServer(logsvc.Handler(l.st))
	t.Cleanup(srv.Close)
	resp, body := get(t, srv.URL+"/log/trust")
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	key := l.signer.Key()
	served, err := trust.Open(body, &key)
	require.NoError(t, err)
	assert.Equal(t, r.Marshal(), served.Marshal())
	other := otherKey(t)
	_, err = trust.Open(body, &other)
	assert.Error(t, err, "another key does not open it")

	dir := t.TempDir()
	_, err = logsvc.Export(ctx, l.st, dir)
	require.NoError(t, err)
	exported, err := os.ReadFile(filepath.Join(dir, logsvc.TrustPath))
	require.NoError(t, err)
	assert.Equal(t, body, exported)
}

func TestATrustRootIsNeitherServedNorListedBeforeItExistsOrUnderAnotherKey(t *testing.T) {
	ctx := context.Background()
	l := newTestLog(t)
	srv := httptest.NewServer(logsvc.Handler(l.st))
	t.Cleanup(srv.Close)
	resp, body := get(t, srv.URL+"/log/trust")
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, string(body))
	assert.Contains(t, string(body), "no trust root yet")

	l.grow(t, 3) // the log's key is fixed by its first checkpoint
	skey, _, err := evlog.GenerateKey(testOrigin)
	require.NoError(t, err)
	wrong, err := evlog.NewSigner(skey, testOrigin)
	require.NoError(t, err)
	_, err = logsvc.ListAccounts(ctx, l.st, wrong, []logsvc.Account{{Chain: "etherlink", Network: evmNet, Address: evmOne}}, time.Now())
	assert.ErrorContains(t, err, "the log is signed with")
}

func otherKey(t *testing.T) evlog.Key {
	t.Helper()
	_, vkey, err := evlog.GenerateKey(testOrigin)
	require.NoError(t, err)
	k, err := evlog.ParseKey(vkey)
	require.NoError(t, err)
	return k
}

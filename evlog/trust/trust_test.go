package trust_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/evlog/trust"
)

const evmNet, solNet = "eip155:42793", "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"

func newRoot(t *testing.T) (trust.Root, *evlog.Signer) {
	t.Helper()
	skey, vkey, err := evlog.GenerateKey("keeper.example/log")
	require.NoError(t, err)
	s, err := evlog.NewSigner(skey, "keeper.example/log")
	require.NoError(t, err)
	r, err := trust.New(vkey, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	require.NoError(t, err)
	return r, s
}

func TestARetiredAccountCoversOnlyTheSizesBeforeItsRetirementAndNothingIsRemoved(t *testing.T) {
	r, _ := newRoot(t)
	at := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	require.True(t, r.List("etherlink", evmNet, "0xAAaa000000000000000000000000000000000001", 120, at))
	require.False(t, r.List("etherlink", evmNet, "0xaaaa000000000000000000000000000000000001", 300, at), "the open account again: no change")
	before := r
	before.Accounts = append([]trust.Account(nil), r.Accounts...)
	require.True(t, r.List("etherlink", evmNet, "0xbbbb000000000000000000000000000000000002", 500, at.Add(time.Hour)))
	require.NoError(t, trust.Extends(before, r))
	ok, _ := r.Allows("etherlink", evmNet, "0xaaaa000000000000000000000000000000000001", 700)
	assert.True(t, ok, "a second worker's account does not close the first's: both anchor")
	ok, _ = r.Allows("etherlink", evmNet, "0xbbbb000000000000000000000000000000000002", 499)
	assert.False(t, ok, "an account listed later covers only sizes from its listing")

	before.Accounts = append([]trust.Account(nil), r.Accounts...)
	require.NoError(t, r.Retire(evmNet+":0xaaaa000000000000000000000000000000000001", 500, at.Add(2*time.Hour)))
	require.NoError(t, trust.Extends(before, r))
	assert.True(t, r.Retired(evmNet, "0xAAAA000000000000000000000000000000000001"))
	require.False(t, r.List("etherlink", evmNet, "0xaaaa000000000000000000000000000000000001", 600, at), "a retired account is not listed again by a worker that still holds its key")
	assert.Error(t, r.Retire(evmNet+":0xaaaa000000000000000000000000000000000001", 600, at), "retired once")

	ok, _ = r.Allows("etherlink", evmNet, "0xaaaa000000000000000000000000000000000001", 0)
	assert.True(t, ok, "the first account of a network covers sizes from 0")
	ok, _ = r.Allows("etherlink", evmNet, "0xaaaa000000000000000000000000000000000001", 500)
	assert.False(t, ok, "the retired account does not cover sizes from its retirement")
	ok, why := r.Allows("etherlink", evmNet, "0xcccc000000000000000000000000000000000003", 10)
	assert.False(t, ok)
	assert.Contains(t, why, "0xcccc")
	ok, _ = r.Allows("etherlink", "eip155:1", "0xaaaa000000000000000000000000000000000001", 10)
	assert.False(t, ok, "another network lists no account")

	shrunk := r
	shrunk.Accounts = r.Accounts[1:]
	assert.Error(t, trust.Extends(r, shrunk))
}

func TestASignedRootOpensOnlyWithItsLogKey(t *testing.T) {
	r, s := newRoot(t)
	r.List("solana", solNet, "9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin", 0, time.Now())
	signed, err := trust.Sign(r, s)
	require.NoError(t, err)
	key := s.Key()
	got, err := trust.Open(signed, &key)
	require.NoError(t, err)
	assert.Equal(t, r.Accounts[0].ID, got.Accounts[0].ID)

	other, _ := newRoot(t)
	otherKey, err := other.Key()
	require.NoError(t, err)
	_, err = trust.Open(signed, &otherKey)
	assert.Error(t, err)

	plain, err := trust.Open(r.Marshal(), nil)
	require.NoError(t, err)
	assert.Equal(t, r.Log, plain.Log)
	_, err = trust.Parse([]byte(`{"mediaType":"application/json"}`))
	assert.ErrorContains(t, err, "mediaType")
}

func TestTheShortFormPinsAnAccountOnAnyNetworkOfItsChain(t *testing.T) {
	r, _ := newRoot(t)
	short, err := trust.ShortForm(r.Log.Key, []string{"etherlink=0xAAAA000000000000000000000000000000000001", solNet + ":9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin"})
	require.NoError(t, err)
	ok, _ := short.Allows("etherlink", "eip155:128123", "0xaaaa000000000000000000000000000000000001", 7)
	assert.True(t, ok)
	ok, _ = short.Allows("solana", solNet, "9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin", 7)
	assert.True(t, ok)
	_, err = trust.ShortForm(r.Log.Key, []string{"0xabc"})
	assert.Error(t, err)
}

package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/evlog/trust"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/store/storetest"
)

func TestTheTrustRootIsOnlyEverAppendedTo(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		ctx := context.Background()
		st := db.Open(t)
		skey, vkey, err := evlog.GenerateKey("keeper.test/log")
		require.NoError(t, err)
		signer, err := evlog.NewSigner(skey, "keeper.test/log")
		require.NoError(t, err)
		const net = "eip155:128123"
		at := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
		// list is what a starting worker does: its account on its network.
		list := func(account string, size uint64) func(trust.Root, bool) (trust.Root, []byte, error) {
			return func(prev trust.Root, ok bool) (trust.Root, []byte, error) {
				r := prev
				if !ok {
					r, err = trust.New(vkey, at)
					require.NoError(t, err)
				}
				r.Accounts = append([]trust.Account(nil), r.Accounts...)
				r.List("etherlink", net, account, size, at)
				note, err := trust.Sign(r, signer)
				return r, note, err
			}
		}

		_, err = st.TrustRoot(ctx)
		require.ErrorIs(t, err, store.ErrNotFound)
		first, err := st.UpdateTrustRoot(ctx, list("0xaaaa000000000000000000000000000000000001", 10))
		require.NoError(t, err)
		assert.EqualValues(t, 1, first.Version)
		again, err := st.UpdateTrustRoot(ctx, list("0xAAAA000000000000000000000000000000000001", 50))
		require.NoError(t, err)
		assert.EqualValues(t, 1, again.Version, "the same account again: no new version")

		rotated, err := st.UpdateTrustRoot(ctx, list("0xbbbb000000000000000000000000000000000002", 60))
		require.NoError(t, err)
		assert.EqualValues(t, 2, rotated.Version)
		got, err := st.TrustRoot(ctx)
		require.NoError(t, err)
		require.Len(t, got.Root.Accounts, 2)
		assert.Nil(t, got.Root.Accounts[0].Sizes.End, "a second worker's account leaves the first open")
		assert.EqualValues(t, 60, got.Root.Accounts[1].Sizes.Start, "an account listed later covers the sizes from its listing")
		key := signer.Key()
		served, err := trust.Open(got.Note, &key)
		require.NoError(t, err)
		assert.Equal(t, got.Root.Marshal(), served.Marshal(), "the signed note is the stored root")

		_, err = st.UpdateTrustRoot(ctx, func(prev trust.Root, _ bool) (trust.Root, []byte, error) {
			prev.Accounts = prev.Accounts[1:]
			note, err := trust.Sign(prev, signer)
			return prev, note, err
		})
		assert.ErrorContains(t, err, "never removed")
		_, err = st.UpdateTrustRoot(ctx, func(prev trust.Root, _ bool) (trust.Root, []byte, error) {
			prev.Accounts = append(prev.Accounts[:2:2], trust.Account{ID: net + ":0xcccc000000000000000000000000000000000003", Chain: "etherlink"})
			return prev, got.Note, nil
		})
		assert.ErrorContains(t, err, "not this root signed", "a note of another root is refused")
		latest, err := st.TrustRoot(ctx)
		require.NoError(t, err)
		assert.EqualValues(t, 2, latest.Version)
	})
}

package logsvc

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/evlog/trust"
	"github.com/keeperhq/keeper/internal/store"
)

// Account is one anchoring account of a starting worker: its chain's name,
// the CAIP-2 network its node is on, and its address.
type Account struct {
	Chain, Network, Address string
}

// TrustStore is where the deployment's trust root is kept: *store.Store.
type TrustStore interface {
	LatestCheckpoint(ctx context.Context) (store.LogCheckpoint, error)
	LogKey(ctx context.Context) (string, error)
	UpdateTrustRoot(ctx context.Context, next func(prev trust.Root, ok bool) (trust.Root, []byte, error)) (store.TrustRoot, error)
}

var _ TrustStore = (*store.Store)(nil)

// ListAccounts records a worker's anchoring accounts in the deployment's
// trust root (docs/log.md, Trust), signed by the log's key: an account
// already open on its network changes nothing; another account on a
// network is appended beside the open ones (workers on several hosts hold
// keys of their own); a new network is appended. A later account covers the
// sizes after the latest checkpoint: every checkpoint signed so far stays
// the earlier accounts'. A worker whose account the operator retired
// (`keeper log trust retire`) is refused: its anchors would not verify.
func ListAccounts(ctx context.Context, st TrustStore, signer *evlog.Signer, accounts []Account, at time.Time) (store.TrustRoot, error) {
	return amendRoot(ctx, st, signer, at, func(r *trust.Root, size uint64) (bool, error) {
		changed := false
		for _, a := range accounts {
			if r.Retired(a.Network, a.Address) {
				return false, fmt.Errorf("trust root: %s was retired; give this worker another %s key", trust.CAIP10(a.Network, a.Address), a.Chain)
			}
			changed = r.List(a.Chain, a.Network, a.Address, size, at) || changed
		}
		return changed, nil
	})
}

// amendRoot changes the deployment's trust root the one way a starting
// worker does: change gets a copy of the latest root (a new one for the
// log's key before the first) and the size after the latest checkpoint,
// where what it adds begins, and says whether it changed anything; a root
// changed is signed by the log's key and stored. A worker whose key is not
// the log's is refused.
func amendRoot(ctx context.Context, st TrustStore, signer *evlog.Signer, at time.Time, change func(r *trust.Root, size uint64) (bool, error)) (store.TrustRoot, error) {
	key := signer.Key().Text
	if have, err := st.LogKey(ctx); err != nil {
		return store.TrustRoot{}, err
	} else if have != "" && have != key {
		return store.TrustRoot{}, fmt.Errorf("trust root: the log is signed with %s, not this worker's %s", have, key)
	}
	var size uint64
	latest, err := st.LatestCheckpoint(ctx)
	switch {
	case err == nil:
		size = latest.Size + 1
	case !errors.Is(err, store.ErrNotFound):
		return store.TrustRoot{}, err
	}
	return st.UpdateTrustRoot(ctx, func(prev trust.Root, ok bool) (trust.Root, []byte, error) {
		r := prev
		if !ok {
			var err error
			if r, err = trust.New(key, at); err != nil {
				return trust.Root{}, nil, err
			}
		}
		r.Accounts = slices.Clone(r.Accounts)
		r.Witnesses.List = slices.Clone(r.Witnesses.List)
		r.Witnesses.Quorum = slices.Clone(r.Witnesses.Quorum)
		changed, err := change(&r, size)
		if err != nil {
			return trust.Root{}, nil, err
		}
		if ok && !changed {
			return prev, nil, nil
		}
		note, err := trust.Sign(r, signer)
		return r, note, err
	})
}

// ListWitnesses records the deployment's witnesses and quorum in its trust
// root, signed by the log's key: a witness not listed yet is listed from
// the log's next checkpoint, and a quorum above the root's applies from
// that checkpoint on, so every checkpoint signed so far keeps verifying
// without cosignatures. A quorum below the root's is refused (a quorum is
// never lowered), as is a witness listed under its name with another key.
// Witnesses the root lists that the configuration no longer names stay
// listed: retiring one is the operator's step (`keeper log trust retire`).
func ListWitnesses(ctx context.Context, st TrustStore, signer *evlog.Signer, witnesses []evlog.WitnessKey, quorum int, at time.Time) (store.TrustRoot, error) {
	return amendRoot(ctx, st, signer, at, func(r *trust.Root, size uint64) (bool, error) {
		changed := false
		for _, w := range witnesses {
			added, err := r.AddWitness(w.Name, w.Text, size)
			if err != nil {
				return false, fmt.Errorf("trust root: %w", err)
			}
			changed = changed || added
		}
		raised, err := r.RequireQuorum(quorum, size)
		if err != nil {
			return false, fmt.Errorf("trust root: KEEPER_LOG_WITNESS_QUORUM: %w", err)
		}
		return changed || raised, nil
	})
}

package starter

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/keeperhq/keeper/api"
	"github.com/keeperhq/keeper/internal/httpapi"
	"github.com/keeperhq/keeper/internal/store"
)

// WalletRecords is the store as wallet routes need it: wallets added,
// their sync status, balances and transfers.
type WalletRecords interface {
	AddWallet(ctx context.Context, wallet string, networks []store.NetworkStart) ([]store.SyncStatus, bool, error)
	WalletStatus(ctx context.Context, wallet string) ([]store.SyncStatus, error)
	Balances(ctx context.Context, wallet string) ([]store.Balance, error)
	ListTransfers(ctx context.Context, f store.TransferFilter) ([]store.StoredTransfer, string, error)
}

// WalletNetwork is a network wallets can be backfilled on.
type WalletNetwork struct {
	Name  string
	Unit  string                       // what progress counts: "blocks" or "signatures"
	Start uint64                       // first block or slot scanned
	Parse func(string) (string, error) // checks an address, returning its canonical form
}

// Wallets is the wallet-backfill side of the API. POST /v1/wallets stores the
// sync-status rows and returns, then calls Wake so that the backfill
// dispatcher (dispatch.Backfills) hands the work to Temporal now rather than
// at its next sweep. Like evidence intake, adding a wallet never waits on
// Temporal.
//
// An add that finds items PENDING or RUNNING changes nothing in the store;
// it calls Recheck, so that the dispatcher hands Temporal again an item no
// workflow works on (docs/backfill.md, "Outages").
type Wallets struct {
	Networks []WalletNetwork
	Wake     func()              // nil: the dispatcher finds the work at its next sweep
	Recheck  func(wallet string) // nil: the workers' reconciliation finds stranded items
}

func (w *Wallets) network(name string) (WalletNetwork, bool) {
	for _, n := range w.Networks {
		if n.Name == name {
			return n, true
		}
	}
	return WalletNetwork{}, false
}

func (w *Wallets) names() string {
	out := make([]string, len(w.Networks))
	for i, n := range w.Networks {
		out[i] = n.Name
	}
	return strings.Join(out, ", ")
}

// canonical returns the address in its stored form, trying each network:
// EVM addresses are case-insensitive, Solana keys are not.
func (w *Wallets) canonical(addr string) (string, bool) {
	for _, n := range w.Networks {
		if c, err := n.Parse(addr); err == nil {
			return c, true
		}
	}
	return "", false
}

func (a *API) walletRoutes() []httpapi.Route {
	return []httpapi.Route{
		{Pattern: "/v1/wallets", Methods: httpapi.Methods{"POST": a.postWallet}},
		{Pattern: "/v1/wallets/{address}", Methods: httpapi.Methods{"GET": a.getWallet}},
		{Pattern: "/v1/wallets/{address}/transfers", Methods: httpapi.Methods{"GET": a.listTransfers}},
	}
}

// decodeWallet parses and validates an add against the configured networks.
// It is pure: nothing is stored until it succeeds.
func (w *Wallets) decodeWallet(body []byte) (string, []store.NetworkStart, *httpapi.Error) {
	var req api.WalletRequest
	if err := httpapi.DecodeStrict(body, &req); err != nil {
		return "", nil, err
	}
	if req.Address == "" {
		return "", nil, httpapi.BadRequest("missing_field", "address", "address is required: the wallet's address on its networks")
	}
	addr := req.Address
	names := req.Networks
	if req.Networks != nil && len(names) == 0 {
		return "", nil, httpapi.BadRequest("missing_field", "networks", "networks must list at least one network (configured: "+w.names()+"), or be left out to mean every network the address fits")
	}
	if names == nil {
		for _, n := range w.Networks {
			if _, err := n.Parse(addr); err == nil {
				names = append(names, n.Name)
			}
		}
		if len(names) == 0 {
			return "", nil, httpapi.BadRequest("invalid_address", "address", fmt.Sprintf("%q is not an address on any configured network (%s)", httpapi.Printable(addr), w.names()))
		}
	}
	var (
		canonical string
		out       []store.NetworkStart
		seen      = map[string]bool{}
	)
	for _, name := range names {
		n, ok := w.network(name)
		switch {
		case seen[name]:
			return "", nil, httpapi.BadRequest("duplicate_network", "networks", fmt.Sprintf("network %q is listed twice", httpapi.Printable(name)))
		case !ok:
			return "", nil, httpapi.BadRequest("unknown_network", "networks", fmt.Sprintf("network %q is not configured here (configured: %s)", httpapi.Printable(name), w.names()))
		}
		seen[name] = true
		c, err := n.Parse(addr)
		if err != nil {
			return "", nil, httpapi.BadRequest("invalid_address", "address", fmt.Sprintf("address is not valid on %s: %v", name, err))
		}
		if canonical != "" && c != canonical {
			return "", nil, httpapi.BadRequest("invalid_address", "address", "address reads differently on "+strings.Join(names, " and ")+"; add it once per network")
		}
		canonical = c
		out = append(out, store.NetworkStart{Network: name, Start: n.Start})
	}
	return canonical, out, nil
}

func (a *API) walletsEnabled(w http.ResponseWriter) bool {
	if a.Wallets == nil || len(a.Wallets.Networks) == 0 {
		httpapi.WriteError(w, &httpapi.Error{Status: http.StatusNotFound, Code: "not_found", Message: "wallet backfill is not enabled here: KEEPER_CHAINS names neither etherlink nor solana"})
		return false
	}
	return true
}

func (a *API) postWallet(w http.ResponseWriter, r *http.Request) {
	if !a.walletsEnabled(w) {
		return
	}
	if a.drain().Draining() {
		w.Header().Set("Retry-After", "5")
		httpapi.WriteError(w, &httpapi.Error{Status: http.StatusServiceUnavailable, Code: "draining", Message: "keeper is shutting down; retry against another node or later"})
		return
	}
	body, aerr := a.readBody(w, r)
	if aerr != nil {
		httpapi.WriteError(w, aerr)
		return
	}
	addr, nets, aerr := a.Wallets.decodeWallet(body)
	if aerr != nil {
		httpapi.WriteError(w, aerr)
		return
	}
	rows, changed, err := a.Store.AddWallet(r.Context(), addr, nets)
	if err != nil {
		httpapi.WriteError(w, httpapi.Internal(a.Logger, "store wallet", err))
		return
	}
	bals, err := a.Store.Balances(r.Context(), addr)
	if err != nil {
		httpapi.WriteError(w, httpapi.Internal(a.Logger, "load balances", err))
		return
	}
	status := http.StatusOK // already at work: nothing changed
	if !changed && a.Wallets.Recheck != nil {
		for _, r := range rows {
			if r.Status.Active() {
				a.Wallets.Recheck(addr)
				break
			}
		}
	}
	if changed {
		if a.Wallets.Wake != nil {
			a.Wallets.Wake()
		}
		status = http.StatusAccepted
	}
	w.Header().Set("Location", walletPath(addr))
	httpapi.WriteJSON(w, status, a.Wallets.view(addr, rows, bals))
}

func walletPath(addr string) string { return "/v1/wallets/" + url.PathEscape(addr) }

// walletAddress validates the {address} path segment.
func (a *API) walletAddress(w http.ResponseWriter, r *http.Request) (string, bool) {
	if !a.walletsEnabled(w) {
		return "", false
	}
	raw := r.PathValue("address")
	addr, ok := a.Wallets.canonical(raw)
	if !ok {
		httpapi.WriteError(w, httpapi.BadRequest("invalid_address", "address", fmt.Sprintf("%q is not an address on any configured network (%s)", httpapi.Printable(raw), a.Wallets.names())))
		return "", false
	}
	return addr, true
}

func (a *API) getWallet(w http.ResponseWriter, r *http.Request) {
	addr, ok := a.walletAddress(w, r)
	if !ok {
		return
	}
	rows, err := a.Store.WalletStatus(r.Context(), addr)
	if errors.Is(err, store.ErrNotFound) {
		httpapi.WriteError(w, &httpapi.Error{Status: http.StatusNotFound, Code: "not_found", Field: "address", Message: "no wallet " + addr + " was added"})
		return
	}
	if err != nil {
		httpapi.WriteError(w, httpapi.Internal(a.Logger, "load wallet", err))
		return
	}
	bals, err := a.Store.Balances(r.Context(), addr)
	if err != nil {
		httpapi.WriteError(w, httpapi.Internal(a.Logger, "load balances", err))
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, a.Wallets.view(addr, rows, bals))
}

func (a *API) listTransfers(w http.ResponseWriter, r *http.Request) {
	addr, ok := a.walletAddress(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	if aerr := httpapi.CheckParams(q, "network", "limit", "cursor"); aerr != nil {
		httpapi.WriteError(w, aerr)
		return
	}
	f := store.TransferFilter{Wallet: addr, Network: q.Get("network")}
	if _, ok := a.Wallets.network(f.Network); f.Network != "" && !ok {
		httpapi.WriteError(w, httpapi.BadRequest("unknown_network", "network", fmt.Sprintf("network %q is not configured here (configured: %s)", httpapi.Printable(f.Network), a.Wallets.names())))
		return
	}
	var aerr *httpapi.Error
	if f.Limit, f.Cursor, aerr = httpapi.PageRequest(q); aerr != nil {
		httpapi.WriteError(w, aerr)
		return
	}
	if _, err := a.Store.WalletStatus(r.Context(), addr); errors.Is(err, store.ErrNotFound) {
		httpapi.WriteError(w, &httpapi.Error{Status: http.StatusNotFound, Code: "not_found", Field: "address", Message: "no wallet " + addr + " was added"})
		return
	} else if err != nil {
		httpapi.WriteError(w, httpapi.Internal(a.Logger, "load wallet", err))
		return
	}
	ts, next, err := a.Store.ListTransfers(r.Context(), f)
	httpapi.WritePage(a.Logger, w, "list transfers", ts, next, err, viewTransfer)
}

func viewTransfer(t store.StoredTransfer) api.Transfer {
	return api.Transfer{
		Network: t.Network, Tx: t.Tx, Kind: string(t.Kind), Index: t.Index, Asset: t.Asset, From: t.From, To: t.To,
		Amount: t.Amount.String(), Direction: string(t.Direction), Class: t.Class, Block: t.Block, BlockTime: timeString(t.BlockTime),
	}
}

func timeString(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Format(time.RFC3339Nano)
}

// overall is the wallet's status: the busiest of its networks'.
func overall(rows []store.SyncStatus) (store.SyncState, bool) {
	rank := map[store.SyncState]int{store.SyncRunning: 5, store.SyncPending: 4, store.SyncFailed: 3, store.SyncAbandoned: 2, store.SyncCompleted: 1}
	best, done := store.SyncCompleted, true
	for _, r := range rows {
		if rank[r.Status] > rank[best] {
			best = r.Status
		}
		if r.Status.Active() || r.Waiting() {
			done = false
		}
	}
	return best, done
}

func (w *Wallets) view(addr string, rows []store.SyncStatus, bals []store.Balance) api.Wallet {
	v := api.Wallet{Address: addr, Networks: []api.WalletNetwork{}, Balances: []api.Balance{},
		Links: map[string]string{"self": walletPath(addr), "transfers": walletPath(addr) + "/transfers"}}
	status, done := overall(rows)
	v.Status, v.Done = string(status), done
	for _, r := range rows {
		n, _ := w.network(r.Network)
		sv := api.WalletNetwork{
			Network: r.Network, Status: string(r.Status), Transfers: r.Transfers, Attempts: r.Attempts, RetryCount: r.RetryCount,
			NextRetryAt: timeString(r.NextRetryAt), LastError: r.LastError,
			StartedAt: timeString(r.StartedAt), FinishedAt: timeString(r.FinishedAt), UpdatedAt: timeString(r.UpdatedAt),
			Progress: api.Progress{Unit: n.Unit, Scanned: r.Scanned, Total: r.Total, Start: r.Start, Target: r.Target},
		}
		switch {
		case r.Total > 0:
			sv.Progress.Percent = float64(int(min(1, float64(r.Scanned)/float64(r.Total))*1000)) / 10
		case r.Status == store.SyncCompleted:
			sv.Progress.Percent = 100
		}
		switch {
		case n.Unit == "signatures" && r.Cursor != "":
			sv.Checkpoint = map[string]any{"slot": r.Checkpoint, "signature": r.Cursor}
		case n.Unit != "signatures" && r.Checkpoint > r.Start:
			sv.Checkpoint = map[string]any{"block": r.Checkpoint - 1}
		}
		v.Networks = append(v.Networks, sv)
	}
	anyFalse, anyUnchecked := false, false
	for _, b := range bals {
		if b.Computed == nil || b.Stale {
			v.Done = false // the wallet's finishing step has not run yet
		}
		bv := api.Balance{Network: b.Network, Asset: b.Asset, Opening: b.Opening.String(), Reconciled: b.Reconciled, Detail: b.Detail,
			Stale: b.Stale, ComputedAt: timeString(b.ComputedAt)}
		if b.Computed != nil {
			bv.Balance = b.Computed.String()
		}
		if b.Chain != nil {
			bv.Chain, bv.At = b.Chain.String(), b.ChainAt
		}
		switch {
		case b.Reconciled == nil:
			anyUnchecked = true
		case !*b.Reconciled:
			anyFalse = true
		}
		v.Balances = append(v.Balances, bv)
	}
	// true: every balance matches the chain; false: one does not; null: not
	// finished, or some balance could not be checked.
	if v.Done && len(bals) > 0 && (anyFalse || !anyUnchecked) {
		ok := !anyFalse
		v.Reconciled = &ok
	}
	return v
}

package backfill

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/keeperhq/keeper/api"
	"github.com/keeperhq/keeper/internal/httpapi"
	"github.com/keeperhq/keeper/internal/store"
)

// Wallets is the store as the wallet routes need it: wallets added, their
// sync status, balances and transfers (*store.Store).
type Wallets interface {
	AddWallet(ctx context.Context, wallet string, networks []store.NetworkStart) ([]store.SyncStatus, bool, error)
	WalletStatus(ctx context.Context, wallet string) ([]store.SyncStatus, error)
	Balances(ctx context.Context, wallet string) ([]store.Balance, error)
	ListTransfers(ctx context.Context, f store.TransferFilter) ([]store.StoredTransfer, string, error)
}

// Network is a network wallets can be backfilled on.
type Network struct {
	Name  string
	Unit  string                       // what progress counts: "blocks" or "signatures"
	Start uint64                       // first block or slot scanned
	Parse func(string) (string, error) // checks an address, returning its canonical form
}

// HTTP serves wallet backfill under /v1/wallets. POST /v1/wallets stores
// the sync-status rows and returns, then calls Wake so that the dispatcher
// (Dispatcher) hands the work to Temporal now rather than at its next
// sweep. Like evidence intake, adding a wallet never waits on Temporal.
//
// An add that finds items PENDING or RUNNING changes nothing in the store;
// it calls Recheck, so that the dispatcher hands Temporal again an item no
// workflow works on (docs/backfill.md, "Outages").
//
// Without Networks every route answers 404: wallet backfill is not enabled.
type HTTP struct {
	Store    Wallets
	Networks []Network
	Wake     func()              // nil: the dispatcher finds the work at its next sweep
	Recheck  func(wallet string) // nil: the workers' reconciliation finds stranded items
	Logger   *slog.Logger
	// MaxBodyBytes is a request body's limit (0: DefaultMaxBodyBytes).
	MaxBodyBytes int64
	// Draining, once started, makes POST /v1/wallets answer 503 (nil:
	// never); the node shares the API's.
	Draining *httpapi.Drain
}

// DefaultMaxBodyBytes is a request body's limit when HTTP sets none.
const DefaultMaxBodyBytes = 1 << 20

// Routes adds the wallet routes to rs.
func (h *HTTP) Routes(rs *httpapi.Routes) {
	rs.Handle("/v1/wallets", httpapi.Methods{"POST": h.postWallet})
	rs.Handle("/v1/wallets/{address}", httpapi.Methods{"GET": h.getWallet})
	rs.Handle("/v1/wallets/{address}/transfers", httpapi.Methods{"GET": h.listTransfers})
}

func (h *HTTP) network(name string) (Network, bool) {
	for _, n := range h.Networks {
		if n.Name == name {
			return n, true
		}
	}
	return Network{}, false
}

func (h *HTTP) names() string {
	out := make([]string, len(h.Networks))
	for i, n := range h.Networks {
		out[i] = n.Name
	}
	return strings.Join(out, ", ")
}

// canonical returns the address in its stored form, trying each network:
// EVM addresses are case-insensitive, Solana keys are not.
func (h *HTTP) canonical(addr string) (string, bool) {
	for _, n := range h.Networks {
		if c, err := n.Parse(addr); err == nil {
			return c, true
		}
	}
	return "", false
}

// decodeWallet parses and validates an add against the configured networks.
// It is pure: nothing is stored until it succeeds.
func (h *HTTP) decodeWallet(body []byte) (string, []store.NetworkStart, *httpapi.Error) {
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
		return "", nil, httpapi.BadRequest("missing_field", "networks", "networks must list at least one network (configured: "+h.names()+"), or be left out to mean every network the address fits")
	}
	if names == nil {
		for _, n := range h.Networks {
			if _, err := n.Parse(addr); err == nil {
				names = append(names, n.Name)
			}
		}
		if len(names) == 0 {
			return "", nil, httpapi.BadRequest("invalid_address", "address", fmt.Sprintf("%q is not an address on any configured network (%s)", httpapi.Printable(addr), h.names()))
		}
	}
	var (
		canonical string
		out       []store.NetworkStart
		seen      = map[string]bool{}
	)
	for _, name := range names {
		n, ok := h.network(name)
		switch {
		case seen[name]:
			return "", nil, httpapi.BadRequest("duplicate_network", "networks", fmt.Sprintf("network %q is listed twice", httpapi.Printable(name)))
		case !ok:
			return "", nil, httpapi.BadRequest("unknown_network", "networks", fmt.Sprintf("network %q is not configured here (configured: %s)", httpapi.Printable(name), h.names()))
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

func (h *HTTP) enabled(w http.ResponseWriter) bool {
	if len(h.Networks) == 0 {
		httpapi.WriteError(w, &httpapi.Error{Status: http.StatusNotFound, Code: "not_found", Message: "wallet backfill is not enabled here: KEEPER_CHAINS names neither etherlink nor solana"})
		return false
	}
	return true
}

func (h *HTTP) postWallet(w http.ResponseWriter, r *http.Request) {
	if !h.enabled(w) {
		return
	}
	if h.Draining.Draining() {
		w.Header().Set("Retry-After", "5")
		httpapi.WriteError(w, &httpapi.Error{Status: http.StatusServiceUnavailable, Code: "draining", Message: "keeper is shutting down; retry against another node or later"})
		return
	}
	body, aerr := httpapi.ReadJSONBody(w, r, cmp.Or(h.MaxBodyBytes, DefaultMaxBodyBytes))
	if aerr != nil {
		httpapi.WriteError(w, aerr)
		return
	}
	addr, nets, aerr := h.decodeWallet(body)
	if aerr != nil {
		httpapi.WriteError(w, aerr)
		return
	}
	rows, changed, err := h.Store.AddWallet(r.Context(), addr, nets)
	if err != nil {
		httpapi.WriteError(w, httpapi.Internal(h.Logger, "store wallet", err))
		return
	}
	bals, err := h.Store.Balances(r.Context(), addr)
	if err != nil {
		httpapi.WriteError(w, httpapi.Internal(h.Logger, "load balances", err))
		return
	}
	status := http.StatusOK // already at work: nothing changed
	if changed {
		status = http.StatusAccepted
	}
	h.handOver(addr, rows, changed)
	w.Header().Set("Location", walletPath(addr))
	httpapi.WriteJSON(w, status, h.view(addr, rows, bals))
}

// handOver tells the dispatcher about an add: Wake when it changed the
// store, else Recheck when an item is at work (it may have no workflow).
func (h *HTTP) handOver(addr string, rows []store.SyncStatus, changed bool) {
	if changed {
		if h.Wake != nil {
			h.Wake()
		}
		return
	}
	if h.Recheck == nil {
		return
	}
	for _, r := range rows {
		if r.Status.Active() {
			h.Recheck(addr)
			return
		}
	}
}

func walletPath(addr string) string { return "/v1/wallets/" + url.PathEscape(addr) }

// walletAddress validates the {address} path segment.
func (h *HTTP) walletAddress(w http.ResponseWriter, r *http.Request) (string, bool) {
	if !h.enabled(w) {
		return "", false
	}
	raw := r.PathValue("address")
	addr, ok := h.canonical(raw)
	if !ok {
		httpapi.WriteError(w, httpapi.BadRequest("invalid_address", "address", fmt.Sprintf("%q is not an address on any configured network (%s)", httpapi.Printable(raw), h.names())))
		return "", false
	}
	return addr, true
}

func (h *HTTP) getWallet(w http.ResponseWriter, r *http.Request) {
	addr, ok := h.walletAddress(w, r)
	if !ok {
		return
	}
	rows, err := h.Store.WalletStatus(r.Context(), addr)
	if errors.Is(err, store.ErrNotFound) {
		httpapi.WriteError(w, &httpapi.Error{Status: http.StatusNotFound, Code: "not_found", Field: "address", Message: "no wallet " + addr + " was added"})
		return
	}
	if err != nil {
		httpapi.WriteError(w, httpapi.Internal(h.Logger, "load wallet", err))
		return
	}
	bals, err := h.Store.Balances(r.Context(), addr)
	if err != nil {
		httpapi.WriteError(w, httpapi.Internal(h.Logger, "load balances", err))
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, h.view(addr, rows, bals))
}

func (h *HTTP) listTransfers(w http.ResponseWriter, r *http.Request) {
	addr, ok := h.walletAddress(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	if aerr := httpapi.CheckParams(q, "network", "limit", "cursor"); aerr != nil {
		httpapi.WriteError(w, aerr)
		return
	}
	f := store.TransferFilter{Wallet: addr, Network: q.Get("network")}
	if _, ok := h.network(f.Network); f.Network != "" && !ok {
		httpapi.WriteError(w, httpapi.BadRequest("unknown_network", "network", fmt.Sprintf("network %q is not configured here (configured: %s)", httpapi.Printable(f.Network), h.names())))
		return
	}
	var aerr *httpapi.Error
	if f.Limit, f.Cursor, aerr = httpapi.PageRequest(q); aerr != nil {
		httpapi.WriteError(w, aerr)
		return
	}
	if _, err := h.Store.WalletStatus(r.Context(), addr); errors.Is(err, store.ErrNotFound) {
		httpapi.WriteError(w, &httpapi.Error{Status: http.StatusNotFound, Code: "not_found", Field: "address", Message: "no wallet " + addr + " was added"})
		return
	} else if err != nil {
		httpapi.WriteError(w, httpapi.Internal(h.Logger, "load wallet", err))
		return
	}
	ts, next, err := h.Store.ListTransfers(r.Context(), f)
	httpapi.WritePage(h.Logger, w, "list transfers", ts, next, err, viewTransfer)
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

func (h *HTTP) view(addr string, rows []store.SyncStatus, bals []store.Balance) api.Wallet {
	v := api.Wallet{Address: addr, Networks: []api.WalletNetwork{}, Balances: []api.Balance{},
		Links: map[string]string{"self": walletPath(addr), "transfers": walletPath(addr) + "/transfers"}}
	status, done := overall(rows)
	v.Status, v.Done = string(status), done
	for _, r := range rows {
		n, _ := h.network(r.Network)
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

// Package solana anchors batches on Solana: one SPL Memo instruction per
// batch whose text is its chains.Anchor's, "keeper:v3:<key hash>:<size>:<root>:<batch id>"
// for the evidence log checkpoint it commits to, or for a batch first sent
// before the log "keeper:v1:" + hex(its own root) (docs/log.md, "Anchors"),
// signed and paid by a configured fee payer, sent over JSON-RPC with solana-go.
//
// Exactly-once anchoring rests on the journal and on blockhash expiry:
//
//   - Submit signs the transaction and journals its wire bytes, signature and
//     the blockhash's lastValidBlockHeight before it sends anything, so a retry
//     after a crash rebroadcasts the very same transaction.
//   - A transaction can only land while the chain's block height is at most
//     its lastValidBlockHeight. Only when the finalized block height has passed
//     it, and a status lookup made after that still has never seen the
//     signature, is the batch re-signed with a fresh blockhash (Status reports
//     Dropped, the workflow calls Submit again).
//   - Sends use maxRetries 0 and the adapter rebroadcasts by itself every
//     RebroadcastInterval until the transaction is seen or expires.
//
// Status lookups of every batch go through one poller per adapter: all
// signatures waiting in a poll round are asked with getSignatureStatuses, at
// most 256 per call, and the block height is fetched once per round. Before a
// batch is reported Dropped or signed again, its signatures are looked up
// once more with searchTransactionHistory, so an anchor that left the node's
// recent status cache (a worker away for minutes) is found, not re-signed.
package solana

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	sol "github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"
	"github.com/gagliardetto/solana-go/rpc/jsonrpc"

	"github.com/keeperhq/keeper/internal/chains"
	"github.com/keeperhq/keeper/internal/chains/poller"
	"github.com/keeperhq/keeper/internal/chains/rpcpool"
	"github.com/keeperhq/keeper/internal/redact"
	"github.com/keeperhq/keeper/internal/retry"
	"github.com/keeperhq/keeper/receipt"
)

// Name is the chain name users put in "chains".
const Name = "solana"

// Defaults of Config.
const (
	DefaultCommitment          = "finalized"
	DefaultRPCConnections      = 4
	DefaultPollInterval        = time.Second
	DefaultRebroadcastInterval = 2 * time.Second
	DefaultRPCTimeout          = 10 * time.Second
)

// MaxSignaturesPerCall is how many signatures one getSignatureStatuses call
// asks for (the RPC's limit).
const MaxSignaturesPerCall = 256

// Config configures the adapter. Zero values take the documented defaults.
type Config struct {
	// RPCURL is the JSON-RPC endpoint, e.g. https://api.devnet.solana.com.
	// Required. Errors and logs show only its scheme and host.
	RPCURL string
	// Payer signs and pays for every anchor transaction; load it with
	// LoadKey. Required. It never appears in errors, logs or formatted output.
	Payer sol.PrivateKey
	// Commitment at which an anchor counts as final: "finalized" (default) or
	// "confirmed".
	Commitment string
	// PriorityFee is the compute unit price in micro-lamports: with
	// MaxPriorityFee 0 the price every anchor pays, otherwise the least one
	// (fees.go says how the two combine). A price of 0 adds no compute
	// budget instructions; above 0 the transaction also sets its compute
	// unit limit to ComputeUnitLimit. Default 0.
	PriorityFee uint64
	// MaxPriorityFee caps the compute unit price, in micro-lamports, that
	// anchors pay when it is read from getRecentPrioritizationFees and
	// raised on re-signs; 0 (default) reads nothing and pays PriorityFee.
	// It must not be below PriorityFee.
	MaxPriorityFee uint64
	// Cluster the node must be on: "mainnet-beta", "devnet" or "testnet",
	// checked against its genesis hash by CheckCluster; "" or "custom"
	// (default) checks nothing.
	Cluster string
	// RPCConnections bounds the concurrent HTTP connections (and concurrent
	// status calls of a poll round) to the endpoint. Default 4.
	RPCConnections int
	// RPCRate caps the requests a second to the endpoint, shared with every
	// other client of it in the process (chains/rpclimit); 0: no cap. A 429
	// pauses them all for its Retry-After whatever the cap.
	RPCRate int
	// PollInterval is the period of the status poll rounds. Default 1 s.
	PollInterval time.Duration
	// HeadInterval between head probes (getSlot) while any batch awaits
	// finality: a new slot starts a status round at once. 0: a quarter of
	// PollInterval; negative: no head probes.
	HeadInterval time.Duration
	// RebroadcastInterval is how often a sent but not yet seen transaction is
	// sent again while its blockhash is valid. Default 2 s.
	RebroadcastInterval time.Duration
	// RPCTimeout bounds one RPC call. Default 10 s.
	RPCTimeout time.Duration
	// AnchorLookbackSlots bounds how far back, in slots, LatestCheckpoints
	// pages through the payer's signatures for its latest anchor. Default
	// DefaultAnchorLookbackSlots (30 days).
	AnchorLookbackSlots uint64
	// Logger receives rebroadcast and re-sign events. Default: discard.
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	c.Commitment = cmp.Or(c.Commitment, DefaultCommitment)
	c.RPCConnections = cmp.Or(c.RPCConnections, DefaultRPCConnections)
	c.PollInterval = cmp.Or(c.PollInterval, DefaultPollInterval)
	c.RebroadcastInterval = cmp.Or(c.RebroadcastInterval, DefaultRebroadcastInterval)
	c.RPCTimeout = cmp.Or(c.RPCTimeout, DefaultRPCTimeout)
	c.AnchorLookbackSlots = cmp.Or(c.AnchorLookbackSlots, DefaultAnchorLookbackSlots)
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return c
}

// Adapter anchors on one Solana cluster through one RPC endpoint. It is safe
// for concurrent use. Create it with New and stop it with Close.
type Adapter struct {
	cfg      Config // Payer cleared; the key lives in payer only
	payer    sol.PrivateKey
	pub      sol.PublicKey
	client   *rpc.Client
	http     *http.Client
	rpcURL   string
	final    int // commitment level that is final (see level)
	log      *slog.Logger
	now      func() time.Time
	statusP  *poller.Poller[rpc.SignatureStatusesResult] // recent status cache
	historyP *poller.Poller[rpc.SignatureStatusesResult] // with history, after expiry
	heightP  *poller.Poller[uint64]

	sigPage int // signatures per getSignaturesForAddress call (LatestCheckpoints)

	lastPrice atomic.Uint64 // compute unit price of the last anchor signed
	noFeeRead atomic.Bool   // the node has no getRecentPrioritizationFees
	feeMu     sync.Mutex
	fee       uint64    // the last percentile read
	feeAt     time.Time // when; it serves submits for blockhashReuse

	mu         sync.Mutex
	sent       map[string]time.Time // signature -> last broadcast
	blocks     map[uint64]block     // slot -> its time and hash
	network    string               // CAIP-2, once read from the node
	hash       cachedHash
	batchLocks map[int64]*batchLock
}

type cachedHash struct {
	hash      sol.Hash
	lastValid uint64
	at        time.Time
}

type batchLock struct {
	mu   sync.Mutex
	refs int
}

// blockhashReuse is how long a fetched blockhash serves new transactions
// (a burst of submits shares one getLatestBlockhash call).
const blockhashReuse = time.Second

// New checks cfg and returns an adapter. Configuration errors are permanent.
func New(cfg Config) (*Adapter, error) {
	cfg = cfg.withDefaults()
	if cfg.RPCURL == "" {
		return nil, retry.Permanent(errors.New("solana: no RPC URL configured"))
	}
	u, err := url.Parse(cfg.RPCURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, retry.Permanent(fmt.Errorf("solana: RPC URL %q must be an http(s) URL", redact.Endpoint(cfg.RPCURL)))
	}
	if err := checkKey(cfg.Payer); err != nil {
		return nil, retry.Permanent(err)
	}
	if cfg.MaxPriorityFee > 0 && cfg.PriorityFee > cfg.MaxPriorityFee {
		return nil, retry.Permanent(fmt.Errorf("solana: priority fee %d is above the maximum priority fee %d (micro-lamports per compute unit)", cfg.PriorityFee, cfg.MaxPriorityFee))
	}
	if _, ok := clusters[cfg.Cluster]; !ok && cfg.Cluster != "" && cfg.Cluster != ClusterCustom {
		return nil, retry.Permanent(fmt.Errorf("solana: unknown cluster %q: use mainnet-beta, devnet, testnet or custom", cfg.Cluster))
	}
	lvl, ok := levels[rpc.ConfirmationStatusType(cfg.Commitment)]
	if !ok || lvl < levels[rpc.ConfirmationStatusConfirmed] {
		return nil, retry.Permanent(fmt.Errorf("solana: commitment %q is not allowed: use finalized or confirmed", cfg.Commitment))
	}

	payer := make(sol.PrivateKey, len(cfg.Payer))
	copy(payer, cfg.Payer)
	cfg.Payer = nil

	hc := newHTTPClient(cfg.RPCConnections)
	hc.Transport = rpcpool.TransportFor(rpcpool.Solana, cfg.RPCURL, float64(cfg.RPCRate), hc.Transport)
	a := &Adapter{
		cfg:        cfg,
		payer:      payer,
		pub:        payer.PublicKey(),
		client:     rpc.NewWithCustomRPCClient(jsonrpc.NewClientWithOpts(cfg.RPCURL, &jsonrpc.RPCClientOpts{HTTPClient: hc})),
		http:       hc,
		rpcURL:     cfg.RPCURL,
		final:      lvl,
		log:        cfg.Logger,
		now:        time.Now,
		sent:       map[string]time.Time{},
		blocks:     map[uint64]block{},
		batchLocks: map[int64]*batchLock{},
		sigPage:    signaturesPerPage,
	}
	var head func(context.Context) (uint64, error)
	if cfg.HeadInterval >= 0 {
		head = func(ctx context.Context) (uint64, error) { // a new slot polls at once
			return a.client.GetSlot(ctx, rpc.CommitmentProcessed)
		}
	}
	a.statusP = poller.New(a.lookupStatuses, poller.Options{
		MaxBatch:     MaxSignaturesPerCall,
		Connections:  cfg.RPCConnections,
		Interval:     cfg.PollInterval,
		CallTimeout:  cfg.RPCTimeout,
		Head:         head,
		HeadInterval: max(cfg.HeadInterval, 0),
	})
	a.historyP = poller.New(a.lookupHistory, poller.Options{
		MaxBatch:    MaxSignaturesPerCall,
		Connections: cfg.RPCConnections,
		Interval:    cfg.PollInterval,
		CallTimeout: cfg.RPCTimeout,
	})
	a.heightP = poller.New(a.lookupHeight, poller.Options{
		MaxBatch:    1,
		Connections: 1,
		Interval:    cfg.PollInterval,
		CallTimeout: cfg.RPCTimeout,
	})
	return a, nil
}

func newHTTPClient(conns int) *http.Client {
	tr := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxConnsPerHost:     conns,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 10 * time.Second,
		ForceAttemptHTTP2:   true,
	}
	return &http.Client{Transport: tr}
}

// Name implements chains.Adapter.
func (a *Adapter) Name() string { return Name }

// PacedStatus reports that Status waits for the status poller's next round
// (signature-status lookups batched per endpoint, started by a new block).
func (a *Adapter) PacedStatus() bool { return true }

// Payer is the fee payer's public key.
func (a *Adapter) Payer() sol.PublicKey { return a.pub }

// Close stops the adapter's pollers and closes its idle connections.
func (a *Adapter) Close() {
	a.statusP.Close()
	a.historyP.Close()
	a.heightP.Close()
	a.http.CloseIdleConnections()
}

// StatusCalls is the number of getSignatureStatuses calls the status poller
// has made (recent status cache; see HistoryCalls for the rest).
func (a *Adapter) StatusCalls() int64 { return a.statusP.Calls() }

// HistoryCalls is the number of getSignatureStatuses calls, searching
// history, that Status made to confirm an expired blockhash never landed
// (batched like StatusCalls, one round at a time).
func (a *Adapter) HistoryCalls() int64 { return a.historyP.Calls() }

// StatusRounds is the number of status poll rounds run so far.
func (a *Adapter) StatusRounds() int64 { return a.statusP.Rounds() }

// HeightCalls is the number of getBlockHeight calls made by Status (one per
// poll round at most).
func (a *Adapter) HeightCalls() int64 { return a.heightP.Calls() }

// Ping implements chains.Adapter: the node answers getHealth with "ok".
func (a *Adapter) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.RPCTimeout)
	defer cancel()
	h, err := a.client.GetHealth(ctx)
	if err != nil {
		return a.rpcErr("getHealth", err)
	}
	if h != rpc.HealthOk {
		return fmt.Errorf("solana: node health is %q", h)
	}
	return nil
}

// Network implements chains.Networked: the cluster's CAIP-2 id from its
// Account implements chains.Accounted: the fee payer's address.
func (a *Adapter) Account() string { return a.pub.String() }

// genesis hash (getGenesisHash), read once.
func (a *Adapter) Network(ctx context.Context) (string, error) {
	a.mu.Lock()
	n := a.network
	a.mu.Unlock()
	if n != "" {
		return n, nil
	}
	h, err := a.genesisHash(ctx)
	if err != nil {
		return "", err
	}
	n = receipt.SolanaNetwork(h)
	a.mu.Lock()
	a.network = n
	a.mu.Unlock()
	return n, nil
}

func (a *Adapter) genesisHash(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.RPCTimeout)
	defer cancel()
	h, err := a.client.GetGenesisHash(ctx)
	if err != nil {
		return "", a.rpcErr("getGenesisHash", err)
	}
	return h.String(), nil
}

// Format keeps the payer key out of any formatted adapter.
func (a *Adapter) Format(f fmt.State, verb rune) {
	if a == nil {
		fmt.Fprint(f, "solana.Adapter(nil)")
		return
	}
	fmt.Fprintf(f, "solana.Adapter{RPCURL:%q Payer:%s Commitment:%q}", redact.Endpoint(a.rpcURL), redacted+"(pubkey "+a.pub.String()+")", a.cfg.Commitment)
}

// lockBatch serialises Submit calls of one batch within this process.
func (a *Adapter) lockBatch(id int64) func() {
	a.mu.Lock()
	l := a.batchLocks[id]
	if l == nil {
		l = &batchLock{}
		a.batchLocks[id] = l
	}
	l.refs++
	a.mu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		a.mu.Lock()
		l.refs--
		if l.refs == 0 {
			delete(a.batchLocks, id)
		}
		a.mu.Unlock()
	}
}

// Balance implements chains.Funded: the fee payer's balance in lamports, at
// the confirmed commitment (getBalance).
func (a *Adapter) Balance(ctx context.Context) (*big.Int, error) {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.RPCTimeout)
	defer cancel()
	out, err := a.client.GetBalance(ctx, a.pub, rpc.CommitmentConfirmed)
	if err != nil {
		return nil, a.rpcErr("getBalance", err)
	}
	return new(big.Int).SetUint64(out.Value), nil
}

var _ chains.Funded = (*Adapter)(nil)

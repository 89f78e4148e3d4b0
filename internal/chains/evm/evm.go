// Package evm anchors batches on EtherLink (or any EVM chain with EIP-1559)
// over HTTP JSON-RPC, with go-ethereum's rpc client.
//
// Each batch gets one 0-value DynamicFeeTx to Config.To (default: the signer
// itself) whose calldata is its chains.Anchor's: the evidence log checkpoint
// it commits to, "keeper:v3:" ‖ key hash ‖ size ‖ root, or for a batch first
// sent before the log "keeper:v1:" ‖ its own root (docs/log.md, "Anchors").
// The signed transaction is journaled before it is broadcast, so a retry
// rebroadcasts the same bytes; one mutex per adapter owns the signer's
// nonces; a transaction without a receipt after ResubmitTimeout is re-signed on the same nonce with fees
// raised by at least 10 % (capped by FeeCeiling); with BlockTime set, one the
// node no longer knows is re-signed so after DropBlocks blocks (EtherLink
// drops an underpriced transaction silently). With NoTip the tip is 0 and
// the max fee is priced on the node's base fee (EtherLink's sequencer
// ignores tips). A `finalized` block that stops while `latest` moves fails
// Ping after FinalityStall (finality.go). Status lookups of every
// in-flight batch are gathered by a chains/poller.Poller into one JSON-RPC
// batch call per MaxBatch hashes, which also reads the latest and finalized
// blocks and the canonical block at each receipt's height.
package evm

import (
	"cmp"
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"
	"github.com/ethereum/go-ethereum/rpc"

	"github.com/keeperhq/keeper/internal/chains"
	"github.com/keeperhq/keeper/internal/chains/poller"
	"github.com/keeperhq/keeper/internal/chains/rpcpool"
	"github.com/keeperhq/keeper/internal/redact"
	"github.com/keeperhq/keeper/internal/retry"
	"github.com/keeperhq/keeper/receipt"
)

// Name is the chain name users ask for.
const Name = "etherlink"

// Defaults applied by New to zero Config fields.
const (
	MainnetChainID         = 42793 // EtherLink mainnet
	DefaultResubmitTimeout = 60 * time.Second
	DefaultRPCConnections  = 4
	DefaultPollInterval    = time.Second
	DefaultMaxBatch        = 100
	DefaultFinalityStall   = 30 * time.Minute
	// DropBlocks is how many block times a transaction may be unknown to
	// the node (no receipt, eth_getTransactionByHash null) before it counts
	// as silently dropped, when Config.BlockTime is set.
	DropBlocks = 10
)

// DefaultFeeCeiling caps the max fee per gas: 100 gwei.
var DefaultFeeCeiling = big.NewInt(100 * params.GWei)

// Config configures an Adapter. Zero values take the documented defaults.
type Config struct {
	// RPCURL is the node's HTTP(S) JSON-RPC endpoint. Required.
	RPCURL string
	// Key signs anchor transactions (see LoadKey). Required. Never printed:
	// Config's String, GoString and LogValue redact it.
	Key *ecdsa.PrivateKey
	// ChainID the node must report from eth_chainId; default 42793 (EtherLink mainnet).
	ChainID uint64
	// To receives the anchor transactions; default (zero) the signer's own address.
	To common.Address
	// Confirmations: 0 (default) = final when the block is at or below the
	// node's `finalized` block; N > 0 = final when N blocks deep (the receipt's
	// block counts as 1), for nodes without the finalized tag.
	Confirmations uint64
	// ResubmitTimeout: a transaction without a receipt this long after it was
	// signed is reported Dropped, and the next Submit re-signs it on the same
	// nonce with higher fees; default 60 s.
	ResubmitTimeout time.Duration
	// FeeCeiling caps the max fee per gas (and the tip), in wei; default 100 gwei.
	FeeCeiling *big.Int
	// NoTip: sign with a priority fee of 0 and a max fee of twice the node's
	// current base fee (the larger of the latest block's baseFeePerGas and
	// eth_gasPrice: headroom for a base fee that rises under a backlog), and
	// re-estimate the gas limit when re-signing. For EtherLink, whose
	// sequencer orders first come, first served and ignores the tip, and
	// whose eth_estimateGas includes the inclusion fee. Default false: tip
	// from eth_maxPriorityFeePerGas, max fee 2 × base fee + tip.
	NoTip bool
	// BlockTime is the chain's block time. When set, a transaction without
	// receipt that the node no longer knows (eth_getTransactionByHash null)
	// DropBlocks block times after it was signed is reported Dropped and the
	// next Submit re-signs it on the same nonce at the current price, instead
	// of waiting for ResubmitTimeout; EtherLink drops an underpriced
	// transaction silently. Default 0: only ResubmitTimeout applies.
	BlockTime time.Duration
	// FinalityStall: when the node's `finalized` block has not moved for this
	// long while `latest` has, Ping fails and FinalityStalled reports it
	// (Confirmations 0 only); default 30 minutes.
	FinalityStall time.Duration
	// RPCConnections bounds concurrent HTTP connections (and concurrent status
	// batch calls) to the node; default 4.
	RPCConnections int
	// RPCRate caps the requests a second to the endpoint, shared with every
	// other client of it in the process (chains/rpclimit); 0: no cap. A 429
	// pauses them all for its Retry-After whatever the cap.
	RPCRate int
	// PollInterval between status rounds while any batch awaits finality; default 1 s.
	PollInterval time.Duration
	// HeadInterval between head probes while any batch awaits finality: a
	// new block, or (without Confirmations) a new `finalized` block, starts
	// a status round at once (head). 0: a quarter of PollInterval; negative:
	// no head probes.
	HeadInterval time.Duration
	// MaxBatch is the number of receipts asked per JSON-RPC batch call; default 100.
	MaxBatch int
	// Logger; default discard. It never receives the key.
	Logger *slog.Logger
	// NonceFile, when set, makes nonce assignment exclusive across processes
	// on this machine (a file lock beside it) and remembers the next nonce
	// there; set it when several workers share one signer.
	NonceFile string

	now func() time.Time // the adapter's clock; nil: time.Now (tests set it, export_test.go)
}

// String describes the config without its key.
func (c Config) String() string {
	key := "<none>"
	if c.Key != nil {
		key = "<redacted, signer " + crypto.PubkeyToAddress(c.Key.PublicKey).Hex() + ">"
	}
	return fmt.Sprintf("evm.Config{RPCURL: %s, Key: %s, ChainID: %d, To: %s, Confirmations: %d, ResubmitTimeout: %s, FeeCeiling: %v, NoTip: %t, BlockTime: %s, FinalityStall: %s, RPCConnections: %d, PollInterval: %s, MaxBatch: %d}",
		redact.Endpoint(c.RPCURL), key, c.ChainID, c.To.Hex(), c.Confirmations, c.ResubmitTimeout, c.FeeCeiling, c.NoTip, c.BlockTime, c.FinalityStall, c.RPCConnections, c.PollInterval, c.MaxBatch)
}

// GoString is String, so %#v does not print the key either.
func (c Config) GoString() string { return c.String() }

// LogValue keeps the key out of slog output.
func (c Config) LogValue() slog.Value { return slog.StringValue(c.String()) }

// Adapter implements chains.Adapter for one signer on one EVM endpoint.
type Adapter struct {
	cfg     Config
	key     *ecdsa.PrivateKey
	from    common.Address
	to      common.Address
	chainID *big.Int
	signer  types.Signer
	rc      *rpc.Client
	log     *slog.Logger
	scrub   *scrubber
	now     func() time.Time

	sem   chan struct{} // the nonce owner: one Submit at a time per signer
	xlock *signerLock   // and across processes, when Config.NonceFile is set
	// nextNonce follows the last transaction the node accepted (guarded by
	// sem): for nonceMemory after it, no new transaction is signed below it.
	nextNonce   uint64
	nextNonceAt time.Time

	poller   *poller.Poller[found]
	batches  atomic.Int64 // JSON-RPC batch calls made by status lookups
	hmu      sync.Mutex
	heights  map[string]uint64     // tx hash -> block height of its last receipt
	resent   map[int64]time.Time   // batch -> last rebroadcast of a transaction that could not be bumped
	stopped  atomic.Pointer[error] // why the signer was stopped (its key is used elsewhere); nil: running
	gapFills atomic.Int64          // journaled transactions rebroadcast to fill a nonce gap
	finWarn  sync.Once
	fin      finalityWatch
	closeOne sync.Once
}

var (
	_ chains.Adapter = (*Adapter)(nil)
	_ chains.Funded  = (*Adapter)(nil)
)

// New dials the node, checks its chain id and starts the status poller.
// Configuration errors, and a node on another chain, are retry.Permanent.
func New(ctx context.Context, cfg Config) (*Adapter, error) {
	if cfg.RPCURL == "" {
		return nil, retry.Permanent(errors.New("etherlink: RPCURL is required"))
	}
	if cfg.Key == nil {
		return nil, retry.Permanent(errors.New("etherlink: Key is required (see evm.LoadKey)"))
	}
	cfg.ChainID = cmp.Or(cfg.ChainID, MainnetChainID)
	cfg.ResubmitTimeout = cmp.Or(cfg.ResubmitTimeout, DefaultResubmitTimeout)
	if cfg.FeeCeiling == nil || cfg.FeeCeiling.Sign() <= 0 {
		cfg.FeeCeiling = new(big.Int).Set(DefaultFeeCeiling)
	}
	cfg.RPCConnections = cmp.Or(cfg.RPCConnections, DefaultRPCConnections)
	cfg.PollInterval = cmp.Or(cfg.PollInterval, DefaultPollInterval)
	cfg.MaxBatch = cmp.Or(cfg.MaxBatch, DefaultMaxBatch)
	cfg.FinalityStall = cmp.Or(cfg.FinalityStall, DefaultFinalityStall)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.now == nil {
		cfg.now = time.Now
	}
	key := cfg.Key
	a := &Adapter{
		key:     key,
		from:    crypto.PubkeyToAddress(key.PublicKey),
		chainID: new(big.Int).SetUint64(cfg.ChainID),
		scrub:   newScrubber(key, cfg.RPCURL),
		now:     cfg.now,
		sem:     make(chan struct{}, 1),
		heights: map[string]uint64{},
		resent:  map[int64]time.Time{},
	}
	cfg.Key = nil // the adapter keeps the key in one field only
	a.cfg = cfg
	a.log = cfg.Logger.With("chain", Name, "signer", a.from.Hex())
	a.to = cfg.To
	if a.to == (common.Address{}) {
		a.to = a.from
	}
	a.signer = types.LatestSignerForChainID(a.chainID)

	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxConnsPerHost = cfg.RPCConnections
	transport.MaxIdleConnsPerHost = cfg.RPCConnections
	paced := rpcpool.TransportFor(rpcpool.EVM, cfg.RPCURL, float64(cfg.RPCRate), transport)
	rc, err := rpc.DialOptions(ctx, cfg.RPCURL, rpc.WithHTTPClient(&http.Client{Transport: paced}))
	if err != nil {
		return nil, a.fail(retry.Permanent(fmt.Errorf("etherlink: dial %s: %w", cfg.RPCURL, err)))
	}
	a.rc = rc
	got, err := a.remoteChainID(ctx)
	if err != nil {
		rc.Close()
		return nil, a.fail(fmt.Errorf("etherlink: eth_chainId: %w", err))
	}
	if got != cfg.ChainID {
		rc.Close()
		return nil, a.fail(retry.Permanent(fmt.Errorf("etherlink: chain id mismatch: configured %d, node at %s reports %d", cfg.ChainID, cfg.RPCURL, got)))
	}
	if cfg.NonceFile != "" {
		a.xlock = newSignerLock(cfg.NonceFile)
	}
	var head func(context.Context) (uint64, error)
	if cfg.HeadInterval >= 0 {
		head = a.head // a new block, or a new finalized one, polls at once
	}
	a.poller = poller.New(a.lookup, poller.Options{
		MaxBatch:     cfg.MaxBatch,
		Connections:  cfg.RPCConnections,
		Interval:     cfg.PollInterval,
		Head:         head,
		HeadInterval: max(cfg.HeadInterval, 0),
	})
	a.log.Info("etherlink adapter ready", "to", a.to.Hex(), "chain_id", cfg.ChainID, "confirmations", cfg.Confirmations, "fee_ceiling_wei", cfg.FeeCeiling.String(),
		"no_tip", cfg.NoTip, "drop_after", a.dropAfter().String(), "finality_stall", cfg.FinalityStall.String())
	return a, nil
}

// Name implements chains.Adapter.
func (a *Adapter) Name() string { return Name }

// PacedStatus reports that Status waits for the status poller's next round
// (receipt lookups batched per endpoint, started by a new block).
func (a *Adapter) PacedStatus() bool { return true }

// Network implements chains.Networked: "eip155:" and the chain id the node
// reported when the adapter started (New refuses a node on another chain).
func (a *Adapter) Network(context.Context) (string, error) {
	return receipt.EVMNetwork(a.cfg.ChainID), nil
}

// Address is the signer's address.
func (a *Adapter) Address() common.Address { return a.from }

// Account implements chains.Accounted: the signer's checksummed address.
func (a *Adapter) Account() string { return a.from.Hex() }

// String describes the adapter without its key.
func (a *Adapter) String() string {
	return fmt.Sprintf("etherlink adapter (signer %s, chain %d, %s)", a.from.Hex(), a.cfg.ChainID, redact.Endpoint(a.cfg.RPCURL))
}

// StatusCalls is the number of batched status calls made so far: each is
// exactly one JSON-RPC batch request carrying up to MaxBatch receipt lookups.
func (a *Adapter) StatusCalls() int64 { return a.poller.Calls() }

// StatusRounds is the number of status poll rounds run so far.
func (a *Adapter) StatusRounds() int64 { return a.poller.Rounds() }

// StatusBatchRequests counts the HTTP JSON-RPC batch requests status lookups
// actually sent (equal to StatusCalls by construction; kept as a check).
func (a *Adapter) StatusBatchRequests() int64 { return a.batches.Load() }

// Ping implements chains.Adapter: the signer is not stopped, the node
// answers and is on the configured chain, and (Confirmations 0) its
// `finalized` block has not stalled while `latest` moved (FinalityStalled).
func (a *Adapter) Ping(ctx context.Context) error {
	if err := a.Stopped(); err != nil {
		return a.fail(fmt.Errorf("etherlink: ping: %w", err))
	}
	var (
		id          hexutil.Big
		latest, fin *rpcHeader
	)
	elems := []rpc.BatchElem{{Method: "eth_chainId", Result: &id}}
	if a.cfg.Confirmations == 0 {
		elems = append(elems, headerElem("latest", &latest), headerElem("finalized", &fin))
	}
	if err := a.rc.BatchCallContext(ctx, elems); err != nil {
		return a.fail(fmt.Errorf("etherlink: ping: %w", err))
	}
	if elems[0].Error != nil {
		return a.fail(fmt.Errorf("etherlink: ping: eth_chainId: %w", elems[0].Error))
	}
	if got := (*big.Int)(&id).Uint64(); got != a.cfg.ChainID {
		return a.fail(fmt.Errorf("etherlink: ping: node reports chain id %d, configured %d", got, a.cfg.ChainID))
	}
	if len(elems) > 1 && elems[1].Error == nil && latest != nil {
		var finalized *uint64
		if elems[2].Error == nil && fin != nil {
			n := uint64(fin.Number)
			finalized = &n
		}
		a.observeFinality(uint64(latest.Number), finalized)
	}
	if err := a.FinalityStalled(); err != nil {
		return a.fail(fmt.Errorf("etherlink: ping: %w", err))
	}
	return nil
}

// Close stops the poller and closes the RPC client.
func (a *Adapter) Close() {
	a.closeOne.Do(func() {
		a.poller.Close()
		a.rc.Close()
	})
}

// head is the status poller's probe of how far the chain has got: its
// latest block number or, where anchors become final by the node's
// `finalized` block, that plus the finalized block's number (one JSON-RPC
// batch), so a round starts when either moves. A node may show the block
// that finalizes an anchor a moment before it moves `finalized` (keeper
// dev's chain syncs its database in between): a round started by the new
// head alone then reads the old finalized block, and the anchor waited a
// whole block for the next round (docs/anchoring.md, "Confirmation right
// after finality").
func (a *Adapter) head(ctx context.Context) (uint64, error) {
	var latest hexutil.Uint64
	if a.cfg.Confirmations > 0 {
		if err := a.rc.CallContext(ctx, &latest, "eth_blockNumber"); err != nil {
			return 0, err
		}
		return uint64(latest), nil
	}
	var fin *rpcHeader
	elems := []rpc.BatchElem{{Method: "eth_blockNumber", Result: &latest}, headerElem("finalized", &fin)}
	if err := a.rc.BatchCallContext(ctx, elems); err != nil {
		return 0, err
	}
	for _, e := range elems {
		if e.Error != nil {
			return 0, e.Error
		}
	}
	if fin == nil {
		return 0, errors.New("no finalized block")
	}
	// Neither goes back (bar a reorganised head), so their sum grows
	// whenever either moves.
	return uint64(latest) + uint64(fin.Number), nil
}

func (a *Adapter) remoteChainID(ctx context.Context) (uint64, error) {
	var id hexutil.Big
	if err := a.rc.CallContext(ctx, &id, "eth_chainId"); err != nil {
		return 0, err
	}
	return (*big.Int)(&id).Uint64(), nil
}

// fail scrubs secrets from an error's message, keeping its chain (and
// permanence) intact. Every error the adapter returns goes through it.
func (a *Adapter) fail(err error) error {
	if err == nil {
		return nil
	}
	s := &scrubbedError{msg: a.scrub.text(err.Error()), err: err}
	if retry.IsPermanent(err) {
		return retry.Permanent(s)
	}
	return s
}

// errAttr is a log attribute for an error, scrubbed.
func (a *Adapter) errAttr(err error) slog.Attr {
	return slog.String("error", a.scrub.text(err.Error()))
}

// Balance implements chains.Funded: the signer's balance in wei at the
// node's latest block (eth_getBalance).
func (a *Adapter) Balance(ctx context.Context) (*big.Int, error) {
	var b hexutil.Big
	if err := a.rc.CallContext(ctx, &b, "eth_getBalance", a.from, "latest"); err != nil {
		return nil, a.fail(fmt.Errorf("etherlink: eth_getBalance: %w", err))
	}
	return (*big.Int)(&b), nil
}

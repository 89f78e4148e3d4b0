// Package devchain runs a local EVM chain for keeper dev and for tests: a
// go-ethereum node (in memory, or on disk) serving real HTTP JSON-RPC on 127.0.0.1, with
// a chain id of its own (receipt.LocalEVMChainID, not a public network's, so
// nothing signed on it is valid on EtherLink), transactions with a tip of 0 accepted and mined (as
// EtherLink's sequencer, which ignores tips), a funded dev key kept in a file, a block every
// BlockTime, a `finalized` block that lags the head, and fault injection
// (pause mining, drop the mempool, reorganise recent blocks).
//
// # Why not ethclient/simulated.Backend
//
// go-ethereum's simulated backend drives its node with catalyst's
// SimulatedBeacon, whose finality rule is "the last multiple of 32 at or below
// the head": every 32nd block is finalized the moment it is sealed, so a
// transaction landing in such a block is final at once, which no real node
// does. simulated.Backend also hides the node (no way to learn the port chosen
// for port 0) and the blockchain (no way to set finality). devchain therefore
// assembles the same parts the simulated backend does (node.New, eth.New with
// the dev genesis, the filter API) and seals blocks the way the simulated beacon
// does (miner.BuildPayload, then insert and make canonical), but marks
// finalized = head − FinalityDepth (and safe = head − FinalityDepth/2) after
// every block, as a consensus client would.
//
// The chain lives in memory unless Options.Persist keeps it in
// Dir/chain/keeper (a fixed node name: geth's default, the binary's name, gave
// `go run` and every differently named build a chain of its own; a chain an
// older keeper left under another name is moved there, see migrateNodeDir);
// in memory a restart begins again at genesis (the dev key file is reused, so
// the same address is funded again, but transactions journaled before the
// restart are gone with their nonces).
//
// A persisted chain keeps the chain id it was created with: its
// transactions are signed for that id, and geth, given another, would
// rewrite the stored config and then fail to recover their senders. Start
// refuses such a chain with a *ChainIDError instead; a chain an older
// keeper ran with EtherLink mainnet's id (LegacyChainID) is one.
//
// # Block time
//
// A block's timestamp follows the wall clock: max(parent + 1 s, now) in whole
// seconds. go-ethereum's consensus rules want timestamps that strictly grow,
// so two blocks cannot share a second, and a block whose timestamp would be
// more than a second ahead of the clock is not sealed: whatever BlockTime
// says, at most about one block a second is sealed, and the head's timestamp
// stays within a second of the clock. EtherLink's sequencer stamps its
// blueprints with its own clock and its kernel only refuses a timestamp older
// than the parent's (TimestampFromPast), so several EtherLink blocks may share
// a second; devchain keeps geth's stricter rule instead of patching its
// consensus, since what keeper needs from either chain is the same: a block
// time no earlier than the second the block was sealed in, and never far
// from the clock. Options.AheadOfClock (tests only) restores the old
// behaviour, a block every BlockTime stamped a second after its parent.
//
// A chain directory an older keeper left (it sealed a block every 500 ms,
// each a second after its parent, so its clock ran ahead by a second every
// second) is kept, so its blocks, receipts and nonces stay as keeper's store
// knows them, but it seals only one block every catchUpBlockTime (2 s), each
// a second after its parent, until its clock is within a second of the wall
// clock again: the lead shrinks by a second every 2 s. Start logs the lead,
// when it will be gone, and the directory to delete to start afresh instead
// (receipts anchored on the old chain then no longer verify against it).
//
// # Surviving a kill
//
// By default geth keeps the state of its recent blocks in memory (the path
// scheme holds 128 diff layers and a write buffer) and writes it out at a
// clean shutdown; it also moves finalized blocks to its freezer. Killed, it
// reopened at the last state on disk, often genesis, truncated the freezer
// to that block and left the transaction-lookup entries of the later blocks
// behind, so a lookup could name a block number that now held other blocks:
// eth_getTransactionByHash crashed its handler and eth_getTransactionReceipt
// answered "receipt not found", and the sender's nonce went back. A persisted
// chain is therefore created with the hash scheme in archive mode (every
// block's state is written with the block) and no snapshot layers, and after
// every sealed block geth's database log is synced, so a kill loses at most
// the block being sealed. On open, anything above the head is dropped and so
// are lookup entries naming blocks that are not canonical (logged). A chain
// created by an older keeper keeps its path scheme (geth cannot convert it):
// it still loses its recent blocks when killed, and devchain says so in its
// log; deleting its directory starts a crash-safe one.
//
// Faults for tests: PauseMining/ResumeMining (transactions wait in the pool),
// Mine (seal blocks on demand, e.g. with BlockTime set to an hour), DropPending
// (the node forgets its whole pool), Reorg (replace recent non-final blocks,
// with or without their transactions), FreezeFinality/ThawFinality (the
// `finalized` block stops while blocks are still sealed, as on an EtherLink
// node that does not track a rollup node).
package devchain

import (
	"cmp"
	"context"
	"crypto/ecdsa"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ethereum/go-ethereum/beacon/engine"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/eth"
	"github.com/ethereum/go-ethereum/eth/ethconfig"
	"github.com/ethereum/go-ethereum/eth/filters"
	"github.com/ethereum/go-ethereum/miner"
	"github.com/ethereum/go-ethereum/node"
	"github.com/ethereum/go-ethereum/p2p"
	"github.com/ethereum/go-ethereum/params"
	"github.com/ethereum/go-ethereum/rpc"

	"github.com/keeperhq/keeper/internal/config"
	"github.com/keeperhq/keeper/receipt"
)

// Defaults.
const (
	DefaultChainID       = receipt.LocalEVMChainID // keeper dev's local chain, no public network
	DefaultBlockTime     = 500 * time.Millisecond
	DefaultFinalityDepth = 32
	// KeyFileName is the dev key file created in Options.Dir.
	KeyFileName = config.DevEVMKeyFileName
)

// LegacyChainID is the chain id older keepers ran the chain with:
// EtherLink mainnet's. A chain of theirs cannot be kept (see ChainIDError).
const LegacyChainID = 42793

// legacyPathScheme (tests only) creates new persisted chains with geth's path
// scheme, as keeper did before persisted chains were made crash-safe.
var legacyPathScheme bool

// DevBalance is what the dev key (and every Options.Fund address) holds at genesis: 1,000,000 ether.
var DevBalance = new(big.Int).Mul(big.NewInt(1_000_000), big.NewInt(params.Ether))

// Options configure Start.
type Options struct {
	// Dir holds the dev key file (KeyFileName, hex, mode 0600). Required. An
	// existing file is reused, so restarts keep the same funded address.
	Dir string
	// Port of the HTTP JSON-RPC server on 127.0.0.1; 0 picks a free port (see URL).
	Port int
	// BlockTime between blocks; default 500 ms.
	BlockTime time.Duration
	// FinalityDepth: the finalized block is head − FinalityDepth. 0 means the
	// default (32); a negative value makes every block final when sealed.
	FinalityDepth int
	// ChainID; default receipt.LocalEVMChainID (7038309), keeper dev's
	// local chain.
	ChainID uint64
	// Persist keeps the chain in Dir/chain, so a restart continues it (and
	// transactions, receipts and nonces survive, as keeper dev needs when it
	// resumes unfinished batches). Default: in memory, gone at Stop. A
	// persisted chain must be restarted with the same ChainID (Start
	// refuses another with a *ChainIDError) and Fund list (they are its
	// genesis).
	Persist bool
	// Fund lists extra addresses funded at genesis with DevBalance.
	Fund []common.Address
	// Logger receives sealing errors; default discard.
	Logger *slog.Logger
	// AheadOfClock is for tests only (keeper dev never sets it): seal a
	// block every BlockTime even when its timestamp, a second after its
	// parent's, runs ahead of the wall clock, so a test waiting for
	// FinalityDepth blocks at a BlockTime of milliseconds stays fast. See
	// "Block time" in the package documentation.
	AheadOfClock bool
}

// nodeName names the node's directory under Dir/chain (see migrateNodeDir).
// A variable so tests can play an older keeper, which used the binary's name.
var nodeName = "keeper"

// catchUpBlockTime is how often a chain left ahead of the clock by an older
// keeper seals a block until the clock catches up (see "Block time").
const catchUpBlockTime = 2 * time.Second

// Chain is a running dev chain. Methods are safe for concurrent use.
type Chain struct {
	o       Options
	key     *ecdsa.PrivateKey
	keyFile string
	stack   *node.Node
	eth     *eth.Ethereum
	url     string
	depth   uint64

	mu         sync.Mutex // serialises sealing and faults
	paused     bool
	frozen     bool         // finality does not move
	lastSealed time.Time    // when the last block was sealed
	catchingUp bool         // the head's timestamp is ahead of the clock (an older keeper's chain)
	ticks      atomic.Int64 // of the block loop, paused or not (tests wait on them)

	stop     chan struct{}
	loopDone chan struct{}
	stopOnce sync.Once
	stopErr  error
}

// Start runs a dev chain until Stop. ctx only bounds startup.
func Start(ctx context.Context, o Options) (*Chain, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if o.Dir == "" {
		return nil, errors.New("devchain: Options.Dir is required (it holds the dev key file)")
	}
	o.BlockTime = cmp.Or(o.BlockTime, DefaultBlockTime)
	o.ChainID = cmp.Or(o.ChainID, DefaultChainID)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	depth := uint64(0)
	switch {
	case o.FinalityDepth == 0:
		depth = DefaultFinalityDepth
	case o.FinalityDepth > 0:
		depth = uint64(o.FinalityDepth)
	}
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("devchain: create %s: %w", o.Dir, err)
	}
	keyFile := filepath.Join(o.Dir, KeyFileName)
	key, err := loadOrCreateKey(keyFile)
	if err != nil {
		return nil, err
	}

	nodeCfg, err := nodeConfig(o)
	if err != nil {
		return nil, err
	}
	ethCfg := ethConfig(o, crypto.PubkeyToAddress(key.PublicKey))
	stack, err := node.New(&nodeCfg)
	if err != nil {
		return nil, fmt.Errorf("devchain: node: %w", err)
	}
	crashSafe := true
	if o.Persist {
		stored, err := probeStoredChain(stack)
		if err == nil && stored.chainID != 0 && stored.chainID != o.ChainID {
			err = &ChainIDError{Dir: nodeCfg.DataDir, Stored: stored.chainID, Want: o.ChainID}
		}
		if err != nil {
			stack.Close()
			return nil, err
		}
		crashSafe = chooseStateScheme(stored.scheme, &ethCfg)
	}
	backend, err := eth.New(stack, &ethCfg)
	if err != nil {
		stack.Close()
		return nil, fmt.Errorf("devchain: eth service: %w", err)
	}
	if o.Persist {
		repairAfterCrash(backend, o.Logger, crashSafe, nodeCfg.DataDir)
	}
	if err := startNode(stack, backend, o.Port); err != nil {
		stack.Close()
		return nil, err
	}

	c := &Chain{
		o:        o,
		key:      key,
		keyFile:  keyFile,
		stack:    stack,
		eth:      backend,
		url:      stack.HTTPEndpoint(),
		depth:    depth,
		stop:     make(chan struct{}),
		loopDone: make(chan struct{}),
	}
	c.noteLead(time.Now())
	// Seal a block and let the transaction indexer catch up: on a chain still
	// at genesis geth answers lookups of unknown transactions with "transaction
	// indexing is in progress" instead of null. A chain whose head is ahead
	// of the clock waits for its turn like any other block.
	if c.mayseal(time.Now()) {
		if err := c.Mine(1); err != nil {
			stack.Close()
			return nil, err
		}
	}
	for deadline := time.Now().Add(5 * time.Second); !backend.BlockChain().TxIndexDone() && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	go c.loop()
	return c, nil
}

// startNode serves the chain's JSON-RPC (with the filter API) and readies
// it to seal: synced, taking transactions without a tip, and with genesis
// finalized on a chain that has no finalized block yet.
func startNode(stack *node.Node, backend *eth.Ethereum, port int) error {
	fs := filters.NewFilterSystem(backend.APIBackend, filters.Config{})
	stack.RegisterAPIs([]rpc.API{{Namespace: "eth", Service: filters.NewFilterAPI(fs)}})
	if err := stack.Start(); err != nil {
		return fmt.Errorf("devchain: start node (port %d): %w", port, err)
	}
	backend.SetSynced()
	// EtherLink's sequencer ignores the tip, so keeper pays none there: the
	// pool and the miner take transactions with a tip of 0 (geth's default
	// floors are 1 wei and 1 mwei).
	backend.TxPool().SetGasTip(new(big.Int))
	if err := backend.Miner().SetGasTip(new(big.Int)); err != nil {
		return fmt.Errorf("devchain: miner tip: %w", err)
	}
	if bc := backend.BlockChain(); bc.CurrentFinalBlock() == nil {
		bc.SetFinalized(bc.Genesis().Header())
		bc.SetSafe(bc.Genesis().Header())
	}
	return nil
}

// nodeConfig is the go-ethereum node's configuration: in memory, or in
// o.Dir/chain with o.Persist; JSON-RPC over HTTP on 127.0.0.1:o.Port only.
func nodeConfig(o Options) (node.Config, error) {
	nodeCfg := node.DefaultConfig
	nodeCfg.DataDir = "" // in memory
	nodeCfg.Name = nodeName
	if o.Persist {
		nodeCfg.DataDir = filepath.Join(o.Dir, "chain")
		nodeCfg.KeyStoreDir = filepath.Join(o.Dir, "chain", "keystore")
		if err := migrateNodeDir(nodeCfg.DataDir, nodeName, o.Logger); err != nil {
			return node.Config{}, err
		}
	}
	nodeCfg.IPCPath = ""
	nodeCfg.P2P = p2p.Config{NoDiscovery: true, MaxPeers: 0}
	nodeCfg.HTTPHost = "127.0.0.1"
	nodeCfg.HTTPPort = o.Port
	nodeCfg.HTTPModules = []string{"eth", "net", "web3", "txpool"}
	nodeCfg.HTTPVirtualHosts = []string{"localhost", "127.0.0.1"}
	nodeCfg.HTTPCors = []string{"*"} // the /verify page asks the chain from the browser, served by keeper or from a file
	nodeCfg.WSHost = ""
	return nodeCfg, nil
}

// ethConfig is the chain's configuration: every fork from genesis, the dev
// key and o.Fund funded with DevBalance.
func ethConfig(o Options, dev common.Address) ethconfig.Config {
	alloc := core.SystemContractAllocs()
	alloc[dev] = types.Account{Balance: DevBalance}
	for _, a := range o.Fund {
		alloc[a] = types.Account{Balance: DevBalance}
	}
	chainCfg := *params.AllDevChainProtocolChanges // every fork from genesis, as the simulated backend
	chainCfg.ChainID = new(big.Int).SetUint64(o.ChainID)

	ethCfg := ethconfig.Defaults
	ethCfg.Genesis = &core.Genesis{
		Config:   &chainCfg,
		GasLimit: ethconfig.Defaults.Miner.GasCeil,
		Alloc:    alloc,
	}
	ethCfg.NetworkId = o.ChainID
	ethCfg.SyncMode = ethconfig.FullSync
	ethCfg.TxPool.NoLocals = true // a dropped transaction stays dropped (no local re-journaling)
	ethCfg.LogNoHistory = true
	return ethCfg
}

// chooseStateScheme sets a persisted chain's state scheme, given the one
// stored (scheme, "" for a new chain): hash-based archive for a new chain or
// one that has it, which survives a kill (crashSafe); the scheme a chain
// created before has otherwise, as it cannot be converted. See "Surviving a
// kill" in the package documentation.
func chooseStateScheme(scheme string, ethCfg *ethconfig.Config) (crashSafe bool) {
	if scheme == "" && legacyPathScheme {
		scheme = rawdb.PathScheme
	}
	switch scheme {
	case "", rawdb.HashScheme:
		ethCfg.StateScheme = rawdb.HashScheme
		ethCfg.NoPruning = true  // archive: every block's state is written with the block
		ethCfg.SnapshotCache = 0 // no snapshot layers held in memory either
		return true
	default:
		ethCfg.StateScheme = scheme
		return false
	}
}

// URL is the HTTP JSON-RPC endpoint, e.g. http://127.0.0.1:8545.
func (c *Chain) URL() string { return c.url }

// KeyFile is the path of the funded dev key (hex private key).
func (c *Chain) KeyFile() string { return c.keyFile }

// Address is the funded dev account.
func (c *Chain) Address() common.Address { return crypto.PubkeyToAddress(c.key.PublicKey) }

// ChainID is the chain id served by eth_chainId.
func (c *Chain) ChainID() uint64 { return c.o.ChainID }

// Stop stops sealing and shuts the node down. It is idempotent.
func (c *Chain) Stop() error {
	c.stopOnce.Do(func() {
		close(c.stop)
		<-c.loopDone
		c.mu.Lock()
		defer c.mu.Unlock()
		c.stopErr = c.stack.Close()
	})
	return c.stopErr
}

func (c *Chain) loop() {
	defer close(c.loopDone)
	t := time.NewTicker(c.o.BlockTime)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
		}
		c.mu.Lock()
		if !c.paused && c.mayseal(time.Now()) {
			if err := c.seal(); err != nil {
				c.o.Logger.Warn("devchain: seal block", "error", err)
			}
		}
		c.mu.Unlock()
		c.ticks.Add(1)
	}
}

// mayseal reports whether the loop may seal a block now (see "Block time"
// in the package documentation). c.mu must be held.
func (c *Chain) mayseal(now time.Time) bool {
	if c.o.AheadOfClock {
		return true
	}
	lead := c.nextLead(now)
	switch {
	case lead <= time.Second:
		if c.catchingUp {
			c.catchingUp = false
			c.o.Logger.Info("devchain: the chain's clock has caught up with the wall clock: blocks come every block time again")
		}
		return true
	case lead <= 2*time.Second:
		return false // the next second is the next block's
	default:
		return now.Sub(c.lastSealed) >= catchUpBlockTime
	}
}

// nextLead is how far ahead of now the next block's timestamp would be.
func (c *Chain) nextLead(now time.Time) time.Duration {
	return time.Unix(int64(nextTimestamp(c.eth.BlockChain().CurrentBlock().Time, now)), 0).Sub(now)
}

// nextTimestamp is the timestamp of a block sealed now on a parent stamped
// parentTime: the clock's second, or a second after the parent.
func nextTimestamp(parentTime uint64, now time.Time) uint64 {
	return max(parentTime+1, uint64(now.Unix()))
}

// noteLead logs, at start, a head stamped ahead of the clock.
func (c *Chain) noteLead(now time.Time) {
	if c.o.AheadOfClock {
		return
	}
	lead := time.Unix(int64(c.eth.BlockChain().CurrentBlock().Time), 0).Sub(now)
	if lead <= time.Second {
		return
	}
	c.catchingUp = true
	dir := c.stack.InstanceDir()
	dir = cmp.Or(dir, "(in memory)")
	c.o.Logger.Warn("devchain: the chain's block times run ahead of the clock (an older keeper stamped every block a second after its parent, however fast it sealed); "+
		"the chain is kept so its receipts still verify, and it seals one block every 2 s until the clock catches up; "+
		"delete the directory to start a fresh chain instead (receipts anchored on this one then no longer verify locally)",
		"lead", lead.Round(time.Second).String(), "caught_up_in", (lead * catchUpBlockTime / (catchUpBlockTime - time.Second)).Round(time.Second).String(), "dir", dir)
}

// seal builds a block on the current head from the pool, makes it canonical
// and moves finality. c.mu must be held.
func (c *Chain) seal() error {
	bc := c.eth.BlockChain()
	parent := bc.CurrentBlock()
	if err := c.eth.TxPool().Sync(); err != nil {
		return fmt.Errorf("sync txpool: %w", err)
	}
	now := time.Now()
	ts := nextTimestamp(parent.Time, now)
	var random common.Hash
	_, _ = crand.Read(random[:])
	payload, err := c.eth.Miner().BuildPayload(context.Background(), &miner.BuildPayloadArgs{
		Parent:       parent.Hash(),
		Timestamp:    ts,
		FeeRecipient: common.Address{},
		Random:       random,
		Withdrawals:  types.Withdrawals{},
		BeaconRoot:   &common.Hash{},
		Version:      engine.PayloadV3,
	}, false)
	if err != nil {
		return fmt.Errorf("build payload: %w", err)
	}
	env := payload.ResolveFull()
	if env == nil || env.ExecutionPayload == nil {
		return errors.New("build payload: no block produced")
	}
	var blobHashes []common.Hash
	for _, raw := range env.ExecutionPayload.Transactions {
		var tx types.Transaction
		if err := tx.UnmarshalBinary(raw); err != nil {
			return fmt.Errorf("decode built transaction: %w", err)
		}
		blobHashes = append(blobHashes, tx.BlobHashes()...)
	}
	block, err := engine.ExecutableDataToBlock(*env.ExecutionPayload, blobHashes, &common.Hash{}, env.Requests)
	if err != nil {
		return fmt.Errorf("assemble block: %w", err)
	}
	if _, err := bc.InsertBlockWithoutSetHead(context.Background(), block, false); err != nil {
		return fmt.Errorf("insert block %d: %w", block.NumberU64(), err)
	}
	if _, err := bc.SetCanonical(block); err != nil {
		return fmt.Errorf("set head %d: %w", block.NumberU64(), err)
	}
	if c.o.Persist {
		// geth writes without syncing and its database buffers the tail of
		// its log in memory: flush it, so a block a client has seen survives
		// a kill of the process.
		if err := c.eth.ChainDb().SyncKeyValue(); err != nil {
			return fmt.Errorf("sync block %d to disk: %w", block.NumberU64(), err)
		}
	}
	c.lastSealed = now
	c.markFinality(block.NumberU64())
	return nil
}

func (c *Chain) markFinality(head uint64) {
	if c.frozen {
		return
	}
	bc := c.eth.BlockChain()
	fin := uint64(0)
	if head > c.depth {
		fin = head - c.depth
	}
	safe := uint64(0)
	if head > c.depth/2 {
		safe = head - c.depth/2
	}
	if cur := bc.CurrentFinalBlock(); cur != nil && cur.Number.Uint64() > fin {
		fin = cur.Number.Uint64() // finality never goes back
	}
	if h := bc.GetHeaderByNumber(fin); h != nil {
		bc.SetFinalized(h)
	}
	if safe < fin {
		safe = fin
	}
	if h := bc.GetHeaderByNumber(safe); h != nil {
		bc.SetSafe(h)
	}
}

// Head is the number of the latest block.
func (c *Chain) Head() uint64 { return c.eth.BlockChain().CurrentBlock().Number.Uint64() }

// Finalized is the number of the finalized block.
func (c *Chain) Finalized() uint64 {
	if h := c.eth.BlockChain().CurrentFinalBlock(); h != nil {
		return h.Number.Uint64()
	}
	return 0
}

// PauseMining stops sealing blocks (transactions stay in the pool) until
// ResumeMining. Mine still seals on demand.
func (c *Chain) PauseMining() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.paused = true
}

// ResumeMining undoes PauseMining.
func (c *Chain) ResumeMining() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.paused = false
}

// FreezeFinality stops the `finalized` (and `safe`) block where it is while
// blocks are still sealed, until ThawFinality.
func (c *Chain) FreezeFinality() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.frozen = true
}

// ThawFinality undoes FreezeFinality: the next sealed block moves finality
// to head − FinalityDepth again.
func (c *Chain) ThawFinality() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.frozen = false
}

// Mine seals n blocks now, whether or not mining is paused.
func (c *Chain) Mine(n int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for range n {
		if err := c.seal(); err != nil {
			return fmt.Errorf("devchain: %w", err)
		}
	}
	return nil
}

// DropPending makes the node forget every transaction in its pool, as a node
// restarted without a persisted mempool would. It returns how many it dropped.
func (c *Chain) DropPending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dropPending()
}

func (c *Chain) dropPending() int {
	pool := c.eth.TxPool()
	_ = pool.Sync()
	pending, queued := pool.Stats()
	pool.Clear()
	return pending + queued
}

// Reorg replaces the last depth blocks with depth+1 new ones built on their
// parent, so the chain gets longer and every block hash at those heights
// changes. With keepTxs the removed blocks' transactions go back to the pool
// and land again in the new blocks (at new block hashes); without it the pool
// is emptied after the rewind (those transactions and any others pending are
// dropped, as if the winning fork never saw them). A reorg may not touch the
// finalized block.
func (c *Chain) Reorg(depth int, keepTxs bool) error {
	if depth <= 0 {
		return fmt.Errorf("devchain: reorg depth must be positive, got %d", depth)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	bc := c.eth.BlockChain()
	head := bc.CurrentBlock().Number.Uint64()
	if uint64(depth) > head {
		return fmt.Errorf("devchain: reorg depth %d exceeds head %d", depth, head)
	}
	ancestor := head - uint64(depth)
	if fin := bc.CurrentFinalBlock(); fin != nil && fin.Number.Uint64() > ancestor {
		return fmt.Errorf("devchain: reorg to %d would revert finalized block %d", ancestor, fin.Number.Uint64())
	}
	parent := bc.GetBlockByNumber(ancestor)
	if parent == nil {
		return fmt.Errorf("devchain: block %d not found", ancestor)
	}
	if _, err := bc.SetCanonical(parent); err != nil {
		return fmt.Errorf("devchain: rewind to %d: %w", ancestor, err)
	}
	if err := c.eth.TxPool().Sync(); err != nil {
		return fmt.Errorf("devchain: sync txpool: %w", err)
	}
	if !keepTxs {
		c.dropPending()
	}
	for range depth + 1 {
		if err := c.seal(); err != nil {
			return fmt.Errorf("devchain: reorg: %w", err)
		}
	}
	return nil
}

func loadOrCreateKey(path string) (*ecdsa.PrivateKey, error) {
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		k, perr := crypto.HexToECDSA(strings.TrimPrefix(strings.TrimSpace(string(b)), "0x"))
		if perr != nil {
			// Never echo the file's content: it is a private key.
			return nil, fmt.Errorf("devchain: key file %s does not hold a hex secp256k1 private key", path)
		}
		return k, nil
	case errors.Is(err, os.ErrNotExist):
	default:
		return nil, fmt.Errorf("devchain: read key file: %w", err)
	}
	k, err := crypto.GenerateKey()
	if err != nil {
		return nil, fmt.Errorf("devchain: generate key: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".devchain-key-*")
	if err != nil {
		return nil, fmt.Errorf("devchain: write key file: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("devchain: write key file: %w", err)
	}
	if _, err := tmp.WriteString(hex.EncodeToString(crypto.FromECDSA(k)) + "\n"); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("devchain: write key file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return nil, fmt.Errorf("devchain: write key file: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return nil, fmt.Errorf("devchain: write key file: %w", err)
	}
	return k, nil
}

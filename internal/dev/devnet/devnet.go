// Package devnet is an in-process Solana cluster with a JSON-RPC endpoint
// that answers with the real RPC's shapes, codes and messages, for keeper's
// tests and for `keeper dev run`.
//
// It keeps a real ledger: ed25519 signatures are verified, recent blockhashes
// expire after 150 blocks, duplicate signatures are AlreadyProcessed, fees are
// debited (5000 lamports per signature plus the ComputeBudget priority fee),
// and the System Program (transfers), ComputeBudget and SPL Memo (v1 and v2)
// programs execute. A block is produced every SlotTime; a block at slot s is
// confirmed once the chain reaches slot s+1 and finalized at s+32. Reads use
// the same default commitment as the real RPC (finalized), so a client that
// works here has the same commitment handling a real cluster needs.
//
// With Options.Dir the ledger is kept across restarts (and a SIGKILL) in a
// journal there (see journal.go): the same genesis hash, blocks, slots,
// block times, transactions and balances, so a transaction made before a
// restart is found after it. Block times are the wall clock's when the
// block is produced. A restart also produces maxProcessingAge+1 blocks at
// once: the transactions the RPC node was still resending are gone with it,
// and a client waiting for their lastValidBlockHeight to pass before it
// signs anew needs no further wait. Without Dir the ledger lives in memory,
// a new cluster at every start.
//
// Fault injection (dropped or delayed transactions, skipped slots, paused
// slot production, failing RPC calls, congestion that leaves out
// transactions paying too low a compute unit price) and per-method call
// counters are exported for tests.
//
// Differences from a real cluster: HTTP JSON-RPC only (no websocket
// subscriptions); no forks, so confirmation is by slot distance; the System
// Program runs Transfer only (other instructions fail with
// InvalidInstructionData); no address lookup tables, tokens, inner
// instructions or rewards; program accounts carry no ELF data; Memo compute
// units approximate the real program's (1500 + 11500 per signer + 9 per
// byte) and builtins charge 150; the default compute unit limit is 200k per
// non-ComputeBudget instruction; texts of malformed-parameter errors
// approximate serde's.
package devnet

import (
	"cmp"
	"github.com/keeperhq/keeper/internal/config"

	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gagliardetto/solana-go"
)

// PayerKeyFileName is the name of the funded fee-payer key file written to
// Options.Dir.
const PayerKeyFileName = config.DevSolanaKeyFileName

// LamportsPerSOL is 10^9.
const LamportsPerSOL = 1_000_000_000

// Defaults.
const (
	DefaultSlotTime         = 400 * time.Millisecond
	DefaultPayerLamports    = 1_000 * LamportsPerSOL
	DefaultRetryInterval    = 2 * time.Second // the RPC send service's retry rate
	DefaultStatusCacheSlots = 300             // MAX_CACHE_ENTRIES
	faucetLamports          = 500_000_000 * LamportsPerSOL
)

// Options configure a devnet. The zero value is usable.
type Options struct {
	// Port to listen on at 127.0.0.1; 0 picks a free port.
	Port int
	// SlotTime is the time between slots (default 400ms).
	SlotTime time.Duration
	// Dir, if set, is where the funded fee-payer key is kept, as a Solana
	// CLI key file (JSON array of 64 bytes, mode 0600) named PayerKeyFileName,
	// and the ledger's journal (journalFileName). An existing key file is
	// reused, so the payer address is stable across runs, and an existing
	// journal is replayed, so the ledger goes on where it stopped.
	Dir string
	// PayerLamports funds the fee payer at genesis (default 1000 SOL).
	PayerLamports uint64
	// RetryInterval is how often the RPC node rebroadcasts a transaction the
	// leader did not take (see LoseDeliveries), until its blockhash expires
	// or sendTransaction's maxRetries is used up (default 2s).
	RetryInterval time.Duration
	// StatusCacheSlots is how far behind the root getSignatureStatuses still
	// finds a transaction without searchTransactionHistory (default 300).
	StatusCacheSlots uint64
	// Seed seeds rate-based RPC faults (0: random).
	Seed uint64
	// GenesisHash, when set, is the genesis block's hash, which
	// getGenesisHash answers: the devnet poses as that cluster (e.g. Solana
	// devnet's EtWTRABZaYq6iMfeYKouRu166VU2xqa1wcaWoxPkrZBG). Zero: a hash
	// derived from the start time, a new cluster at every start (with Dir:
	// the journal's, once it has one).
	GenesisHash solana.Hash
	// Logger receives the journal's replay and write problems; default discard.
	Logger *slog.Logger

	now func() time.Time // the time slots and deliveries go by; nil: time.Now (tests set it)
}

// Devnet is a running local cluster. Its methods are safe for concurrent use.
type Devnet struct {
	opts    Options
	url     string
	srv     *http.Server
	payer   solana.PrivateKey
	faucet  solana.PrivateKey
	keyFile string

	mu           sync.Mutex // guards everything below, down to fmu
	l            *ledger
	journal      *journal // nil without Options.Dir
	pending      []*pendingTx
	pendingBySig map[solana.Signature]*pendingTx
	paused       bool
	skip         int
	dropNext     int
	loseNext     int
	delay        time.Duration
	congestion   uint64 // least compute unit price a block takes (Congest)

	fmu    sync.Mutex // guards faults, calls, rng
	faults []*faultState
	calls  map[string]int
	rng    *rand.Rand

	ticks atomic.Int64 // of the slot clock, paused or not (tests wait on them)

	stopOnce sync.Once
	done     chan struct{}
	wg       sync.WaitGroup
}

// pendingTx is a transaction the RPC node accepted and keeps (re)delivering
// to the leader until it lands, its blockhash expires or retries run out.
type pendingTx struct {
	p           *parsedTx
	nextAttempt time.Time
	retriesLeft int // -1: until the blockhash expires
	lastValid   uint64
	faultable   bool // sendTransaction traffic (subject to DropNext/LoseDeliveries)
}

// Start launches a devnet: genesis, the slot clock and the RPC server on
// 127.0.0.1. It stops when ctx is done or Stop is called.
func Start(ctx context.Context, opts Options) (*Devnet, error) {
	opts.SlotTime = cmp.Or(opts.SlotTime, DefaultSlotTime)
	opts.PayerLamports = cmp.Or(opts.PayerLamports, DefaultPayerLamports)
	opts.RetryInterval = cmp.Or(opts.RetryInterval, DefaultRetryInterval)
	opts.StatusCacheSlots = cmp.Or(opts.StatusCacheSlots, DefaultStatusCacheSlots)
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.now == nil {
		opts.now = time.Now
	}
	seed := opts.Seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	d := &Devnet{
		opts:         opts,
		pendingBySig: map[solana.Signature]*pendingTx{},
		calls:        map[string]int{},
		rng:          rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		done:         make(chan struct{}),
	}
	var err error
	if opts.Dir != "" {
		d.keyFile = filepath.Join(opts.Dir, PayerKeyFileName)
		d.payer, err = loadOrCreateKey(d.keyFile)
	} else {
		d.payer, err = solana.NewRandomPrivateKey()
	}
	if err != nil {
		return nil, err
	}
	if err := d.openLedger(); err != nil {
		return nil, err
	}

	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(opts.Port)))
	if err != nil {
		d.journal.close()
		return nil, fmt.Errorf("solana devnet: listen: %w", err)
	}
	d.url = "http://" + ln.Addr().String()
	d.srv = &http.Server{Handler: d, ReadHeaderTimeout: 10 * time.Second}
	d.wg.Add(2)
	go func() {
		defer d.wg.Done()
		if err := d.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			_ = err // the listener failed; Stop still works
		}
	}()
	go d.clock()
	if ctx != nil {
		go func() {
			select {
			case <-ctx.Done():
				d.Stop()
			case <-d.done:
			}
		}()
	}
	return d, nil
}

// URL is the JSON-RPC endpoint, http://127.0.0.1:PORT.
func (d *Devnet) URL() string { return d.url }

// Stop shuts the RPC server and the slot clock down. It is idempotent.
func (d *Devnet) Stop() {
	d.stopOnce.Do(func() {
		close(d.done)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := d.srv.Shutdown(ctx); err != nil {
			_ = d.srv.Close()
		}
		d.wg.Wait()
		d.mu.Lock()
		d.journal.close()
		d.journal = nil
		d.mu.Unlock()
	})
}

// Payer is the funded fee-payer key (the one written to FaucetKeyFile).
func (d *Devnet) Payer() solana.PrivateKey { return d.payer }

// FaucetKeyFile is the path of the funded fee-payer key file, or "" when
// Options.Dir was not set.
func (d *Devnet) FaucetKeyFile() string { return d.keyFile }

// Fund credits lamports to an account outside any transaction. An account
// the ledger has never seen is created at genesis, so every commitment level
// sees it at once; an existing account is credited at the current slot.
func (d *Devnet) Fund(pk solana.PublicKey, lamports uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.credit(pk, lamports)
}

// credit credits an account and journals it. d.mu must be held.
func (d *Devnet) credit(pk solana.PublicKey, lamports uint64) {
	d.l.credit(pk, lamports)
	d.journal.append(creditRecord(pk, lamports), true)
}

// NewFundedKey creates a keypair funded with lamports (see Fund).
func (d *Devnet) NewFundedKey(lamports uint64) (solana.PrivateKey, error) {
	k, err := solana.NewRandomPrivateKey()
	if err != nil {
		return nil, err
	}
	d.Fund(k.PublicKey(), lamports)
	return k, nil
}

// Balance returns an account's lamports at the tip (processed).
func (d *Devnet) Balance(pk solana.PublicKey) uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.l.balanceAt(pk, math.MaxUint64)
}

// Slot is the slot of the newest block (processed commitment).
func (d *Devnet) Slot() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.l.tip().slot
}

// BlockHeight is the height of the newest block (processed commitment).
func (d *Devnet) BlockHeight() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.l.tip().height
}

// Pending is how many accepted transactions wait for inclusion.
func (d *Devnet) Pending() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.pending)
}

// --- slot control ---

// Pause stops slot production until Resume. Sends are still accepted.
func (d *Devnet) Pause() { d.mu.Lock(); d.paused = true; d.mu.Unlock() }

// Resume restarts slot production after Pause.
func (d *Devnet) Resume() { d.mu.Lock(); d.paused = false; d.mu.Unlock() }

// Advance produces n slots at once, paused or not (skips from SkipSlots
// apply). Handy to age blockhashes or finalize without waiting.
func (d *Devnet) Advance(n int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for range n {
		d.produceSlot(d.opts.now())
	}
}

// SkipSlots makes the next n slots produce no block (the leader missed
// them): the slot moves on, block height and confirmations do not.
func (d *Devnet) SkipSlots(n int) { d.mu.Lock(); d.skip += n; d.mu.Unlock() }

// --- transaction faults ---

// DropNext makes the next n sendTransaction calls that pass preflight be
// answered normally (with the signature) but never included.
func (d *Devnet) DropNext(n int) { d.mu.Lock(); d.dropNext += n; d.mu.Unlock() }

// ClearDrops cancels what DropNext and LoseDeliveries still had to drop
// or lose: from now on sends are included again.
func (d *Devnet) ClearDrops() { d.mu.Lock(); d.dropNext, d.loseNext = 0, 0; d.mu.Unlock() }

// DelayInclusion holds every transaction received from now on out of blocks
// for at least dur after it arrives (0 restores immediate inclusion).
func (d *Devnet) DelayInclusion(dur time.Duration) { d.mu.Lock(); d.delay = dur; d.mu.Unlock() }

// LoseDeliveries loses the next n deliveries of sendTransaction traffic to
// the leader. The RPC node redelivers every Options.RetryInterval while the
// blockhash is valid, at most maxRetries times when the send set it
// (maxRetries 0: a lost delivery is never retried).
func (d *Devnet) LoseDeliveries(n int) { d.mu.Lock(); d.loseNext += n; d.mu.Unlock() }

// clock produces a slot every SlotTime unless paused.
func (d *Devnet) clock() {
	defer d.wg.Done()
	t := time.NewTicker(d.opts.SlotTime)
	defer t.Stop()
	for {
		select {
		case <-d.done:
			return
		case <-t.C:
			d.mu.Lock()
			if !d.paused {
				d.produceSlot(d.opts.now())
			}
			d.mu.Unlock()
			d.ticks.Add(1)
		}
	}
}

// openLedger replays the journal in Options.Dir, or starts a new ledger
// (journaled when there is a Dir).
func (d *Devnet) openLedger() error {
	if d.opts.Dir == "" {
		return d.newLedger()
	}
	path := filepath.Join(d.opts.Dir, journalFileName)
	r, err := replayJournal(path)
	if err != nil {
		return err
	}
	if r == nil {
		if err := d.newLedger(); err != nil {
			return err
		}
		if d.journal, err = openJournal(path, 0, d.opts.Logger); err != nil {
			return err
		}
		g := d.l.genesis()
		d.journal.append(genesisRecord(g, d.faucet), false)
		for _, pk := range []solana.PublicKey{d.faucet.PublicKey(), d.payer.PublicKey()} {
			d.journal.append(creditRecord(pk, d.l.balanceAt(pk, 0)), false)
		}
		if err := d.journal.f.Sync(); err != nil {
			return fmt.Errorf("solana devnet: write the ledger journal: %w", err)
		}
		return nil
	}
	if !d.opts.GenesisHash.IsZero() && d.opts.GenesisHash != r.l.genesis().hash {
		return fmt.Errorf("solana devnet: the ledger in %s has genesis hash %s, not %s: delete it to start a new ledger", path, r.l.genesis().hash, d.opts.GenesisHash)
	}
	if r.dropped > 0 {
		d.opts.Logger.Warn("solana devnet: the ledger journal ends in a torn or unreadable record (the process was killed while writing it): it and what follows are dropped",
			"file", path, "kept_bytes", r.good, "dropped_bytes", r.dropped, "reason", r.reason)
	}
	d.l, d.faucet = r.l, r.faucet
	if d.journal, err = openJournal(path, r.good, d.opts.Logger); err != nil {
		return err
	}
	if len(d.l.balances[d.payer.PublicKey()]) == 0 {
		d.credit(d.payer.PublicKey(), d.opts.PayerLamports) // a new payer key file
	}
	// Expire every blockhash a client got before the restart (see the
	// package documentation).
	now := time.Now()
	for range maxProcessingAge + 1 {
		d.produceSlot(now)
	}
	return nil
}

// newLedger starts a ledger: a new cluster, or the one Options.GenesisHash names.
func (d *Devnet) newLedger() error {
	var err error
	if d.faucet, err = solana.NewRandomPrivateKey(); err != nil {
		return err
	}
	now := time.Now()
	d.l = newLedger([]byte(strconv.FormatInt(now.UnixNano(), 10)), now.Unix(), d.legacyRestartHeight(), d.opts.GenesisHash)
	d.l.credit(d.faucet.PublicKey(), faucetLamports)
	d.l.credit(d.payer.PublicKey(), d.opts.PayerLamports)
	return nil
}

// Before the journal, keeper kept the devnet's ledger in memory and wrote
// only the tip's height to this file every legacyHeightEvery blocks, so
// that a restart began above every lastValidBlockHeight the old ledger had
// issued. A directory such an older keeper left still has it (and no
// journal): the new ledger begins above it.
const (
	legacyHeightFileName = "solana-devnet.height"
	legacyHeightEvery    = 32
)

func (d *Devnet) legacyRestartHeight() uint64 {
	if d.opts.Dir == "" {
		return 0
	}
	raw, err := os.ReadFile(filepath.Join(d.opts.Dir, legacyHeightFileName))
	if err != nil {
		return 0
	}
	h, err := strconv.ParseUint(strings.TrimSpace(string(raw)), 10, 64)
	if err != nil {
		return 0
	}
	return h + legacyHeightEvery + maxProcessingAge + 1
}

// produceSlot ticks one slot and, unless it is skipped, builds its block
// from the pending transactions that are due. d.mu must be held.
func (d *Devnet) produceSlot(now time.Time) {
	l := d.l
	l.slot++
	if d.skip > 0 {
		d.skip--
		return
	}
	parent := l.tip()
	b := l.openBlock(l.slot, now.Unix())
	b.congestionFee = congestionFee(b, d.congestion)
	env := l.env(b)
	keep := make([]*pendingTx, 0, len(d.pending))
	for _, pt := range d.pending {
		if now.Before(pt.nextAttempt) {
			keep = append(keep, pt)
			continue
		}
		if b.height > pt.lastValid {
			delete(d.pendingBySig, pt.p.sig) // expired: the send service gives up
			continue
		}
		delivered := true
		if pt.faultable && d.loseNext > 0 {
			d.loseNext--
			delivered = false
		}
		if pt.faultable && d.congestion > 0 && computeUnitPrice(&pt.p.tx.Message) < d.congestion {
			delivered = false // the leader fills the block with better-paying transactions
		}
		// The leader's sigverify silently discards bad signatures.
		if delivered && pt.p.sigsOK {
			if res := execute(pt.p, env); res.committed {
				l.include(b, pt.p, res)
				delete(d.pendingBySig, pt.p.sig)
				continue
			}
		}
		if pt.retriesLeft == 0 {
			delete(d.pendingBySig, pt.p.sig)
			continue
		}
		if pt.retriesLeft > 0 {
			pt.retriesLeft--
		}
		pt.nextAttempt = now.Add(d.opts.RetryInterval)
		keep = append(keep, pt)
	}
	d.pending = keep
	l.seal(b)
	d.journal.append(blockRecord(b, parent), len(b.txs) > 0)
}

// enqueue hands a transaction to the RPC node's send service. d.mu must be held.
func (d *Devnet) enqueue(p *parsedTx, lastValid uint64, maxRetries *uint64, faultable bool) {
	if _, dup := d.pendingBySig[p.sig]; dup {
		return
	}
	if _, landed := d.l.txs[p.sig]; landed {
		return
	}
	if faultable && d.dropNext > 0 {
		d.dropNext--
		return
	}
	retries := -1
	if maxRetries != nil {
		retries = int(min(*maxRetries, math.MaxInt32))
	}
	pt := &pendingTx{
		p:           p,
		nextAttempt: d.opts.now().Add(d.delay),
		retriesLeft: retries,
		lastValid:   lastValid,
		faultable:   faultable,
	}
	d.pending = append(d.pending, pt)
	d.pendingBySig[p.sig] = pt
}

// loadOrCreateKey reads a Solana CLI key file, creating it (mode 0600) with
// a new key when it does not exist. Creation is atomic and never replaces a
// file another process wrote first.
func loadOrCreateKey(path string) (solana.PrivateKey, error) {
	k, err := readKeyFile(path)
	if err == nil || !errors.Is(err, os.ErrNotExist) {
		return k, err
	}
	if k, err = solana.NewRandomPrivateKey(); err != nil {
		return nil, err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("solana devnet: key dir: %w", err)
	}
	ints := make([]int, len(k))
	for i, b := range k {
		ints[i] = int(b)
	}
	buf, _ := json.Marshal(ints)
	tmp, err := os.CreateTemp(dir, ".payer-*.json")
	if err != nil {
		return nil, fmt.Errorf("solana devnet: write key file: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err = tmp.Chmod(0o600); err == nil {
		_, err = tmp.Write(buf)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Link(tmp.Name(), path)
		if errors.Is(err, os.ErrExist) {
			return readKeyFile(path)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("solana devnet: write key file: %w", err)
	}
	return k, nil
}

func readKeyFile(path string) (solana.PrivateKey, error) {
	content, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("solana devnet: read key file: %w", err)
	}
	k, err := solana.PrivateKeyFromSolanaKeygenFileBytes(content)
	if err != nil {
		return nil, fmt.Errorf("solana devnet: read key file %s: %w", path, err)
	}
	if len(k) != 64 {
		return nil, fmt.Errorf("solana devnet: key file %s: want 64 bytes, got %d", path, len(k))
	}
	return k, nil
}

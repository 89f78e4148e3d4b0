package devchain_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"
	gethlog "github.com/ethereum/go-ethereum/log"
	"github.com/ethereum/go-ethereum/params"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/dev/devchain"
	"github.com/keeperhq/keeper/internal/dev/testkit"
)

// The crash test re-executes the test binary with these variables set: the
// child then runs only TestDevchainCrashChild, a persisted devchain that
// seals until it is SIGKILLed.
const (
	childDirEnv  = "DEVCHAIN_CRASH_CHILD_DIR"
	childPortEnv = "DEVCHAIN_CRASH_CHILD_PORT"
	childPathEnv = "DEVCHAIN_CRASH_CHILD_LEGACY_PATH_SCHEME"
)

// TestDevchainCrashChild is not a test of its own: it is the process
// TestAPersistedChainReopensConsistentAfterSIGKILL starts and kills.
func TestDevchainCrashChild(t *testing.T) {
	dir := os.Getenv(childDirEnv)
	if dir == "" {
		t.Skip("runs only as the child of TestAPersistedChainReopensConsistentAfterSIGKILL")
	}
	port, err := strconv.Atoi(os.Getenv(childPortEnv))
	require.NoError(t, err)
	devchain.SetLegacyPathScheme(os.Getenv(childPathEnv) != "")
	gethlog.SetDefault(gethlog.NewLogger(gethlog.NewTerminalHandlerWithLevel(os.Stderr, gethlog.LevelWarn, false))) // geth's own warnings, for the failure log
	c, err := devchain.Start(context.Background(), devchain.Options{
		Dir: dir, Port: port, Persist: true, BlockTime: 20 * time.Millisecond, FinalityDepth: 8, AheadOfClock: true,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, nil)),
	})
	require.NoError(t, err)
	fmt.Printf("READY %s\n", c.URL())
	// SIGTERM stops the chain cleanly (geth writes what it holds in memory);
	// SIGKILL just ends the process.
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	<-term
	require.NoError(t, c.Stop())
	os.Exit(0)
}

// TestAPersistedChainReopensConsistentAfterSIGKILL runs a persisted devchain
// in a child process, sends it a steady stream of transfers, SIGKILLs it in
// the middle of block production and reopens it, several times. After every
// reopen each transaction seen mined before a kill is either on the canonical
// chain with a matching receipt or absent (not found, never an error), every
// canonical transaction of the sender is found where it is, the sender's
// nonces on the canonical chain run 0, 1, 2, … without gaps, and
// eth_getTransactionCount(latest) equals their number. A crash-safe chain
// also keeps every block a client saw (but the last, sealed as the kill came).
func TestAPersistedChainReopensConsistentAfterSIGKILL(t *testing.T) {
	lost := crashRounds(t, false, 6)
	require.Zero(t, lost, "reopens that lost blocks a client had seen")
}

// TestALegacyPathSchemeChainReopensConsistentAfterSIGKILL: a chain created by
// an older keeper (geth's path scheme, recent state in memory) loses its
// recent blocks when killed, but still reopens consistent.
func TestALegacyPathSchemeChainReopensConsistentAfterSIGKILL(t *testing.T) {
	lost := crashRounds(t, true, 3)
	require.NotZero(t, lost, "a path-scheme chain does lose its recent blocks when killed (else this test checks nothing)")
}

// crashRounds runs the kill and reopen rounds; it returns how many reopens
// came back more than one block below the highest block seen before the kill.
func crashRounds(t *testing.T, legacyPath bool, kills int) int {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("DEVCHAIN_CRASH_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (replay with DEVCHAIN_CRASH_SEED=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))

	dir := t.TempDir()
	port := testkit.FreePort(t)
	logFile, err := os.Create(filepath.Join(t.TempDir(), "child.log"))
	require.NoError(t, err)
	defer logFile.Close()
	var child *exec.Cmd
	signalChild := func(sig syscall.Signal) {
		if child != nil && child.Process != nil {
			_ = syscall.Kill(child.Process.Pid, sig)
			_ = child.Wait()
		}
	}
	defer signalChild(syscall.SIGKILL)
	defer func() {
		if t.Failed() {
			b, _ := os.ReadFile(logFile.Name())
			if len(b) > 6000 {
				b = b[len(b)-6000:]
			}
			t.Logf("--- child log (tail) ---\n%s", b)
		}
	}()
	startChild := func() *ethclient.Client {
		t.Helper()
		child = exec.Command(os.Args[0], "-test.run=^TestDevchainCrashChild$", "-test.count=1")
		child.Env = append(os.Environ(), childDirEnv+"="+dir, childPortEnv+"="+strconv.Itoa(port))
		if legacyPath {
			child.Env = append(child.Env, childPathEnv+"=1")
		}
		child.Stderr = logFile
		out, err := child.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, child.Start())
		ready := make(chan string, 1)
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				if url, ok := strings.CutPrefix(sc.Text(), "READY "); ok {
					ready <- url
				}
			}
		}()
		select {
		case url := <-ready:
			ec, err := ethclient.Dial(url)
			require.NoError(t, err)
			return ec
		case <-time.After(60 * time.Second):
			t.Fatal("the devchain child did not start within 60 s")
			return nil
		}
	}

	seen := map[common.Hash]uint64{} // every transaction seen mined before a kill -> its block then
	var key *ecdsaKey
	totalSent, reopenedBelow, lostBlocks := 0, 0, 0
	for round := 0; ; round++ { // round 0 ends with a clean stop, the next kills rounds with a SIGKILL
		ec := startChild()
		if key == nil {
			key = loadKey(t, filepath.Join(dir, devchain.KeyFileName))
		}
		if round > 0 {
			below, lost := checkConsistent(t, ec, key.addr, seen)
			if below {
				reopenedBelow++
			}
			if lost {
				lostBlocks++
			}
		}
		if round == kills+1 {
			ec.Close()
			break
		}
		// Traffic: a transfer every 2 ms; a watcher records what it sees mined.
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		var mu sync.Mutex
		sent := 0
		nonce, err := ec.NonceAt(ctx, key.addr, nil)
		require.NoError(t, err)
		wg.Add(2)
		go func() {
			defer wg.Done()
			for n := nonce; ctx.Err() == nil; n++ {
				if err := ec.SendTransaction(ctx, key.transfer(n, round)); err != nil {
					return
				}
				mu.Lock()
				sent++
				mu.Unlock()
				time.Sleep(2 * time.Millisecond)
			}
		}()
		go func() {
			defer wg.Done()
			next, err := ec.BlockNumber(ctx)
			if err != nil {
				return
			}
			for ctx.Err() == nil {
				head, err := ec.BlockNumber(ctx)
				if err != nil {
					return
				}
				for ; next <= head; next++ {
					b, err := ec.BlockByNumber(ctx, new(big.Int).SetUint64(next))
					if err != nil {
						return
					}
					mu.Lock()
					for _, tx := range b.Transactions() {
						seen[tx.Hash()] = next
					}
					mu.Unlock()
				}
				time.Sleep(5 * time.Millisecond)
			}
		}()
		// The stop comes after 20 to 100 more blocks (0.4 to 2 s at 20 ms),
		// at whatever point of block production the child then is.
		from, err := ec.BlockNumber(context.Background())
		require.NoError(t, err)
		until := from + uint64(20+rng.IntN(81))
		require.Eventually(t, func() bool {
			head, err := ec.BlockNumber(context.Background())
			return err == nil && head >= until
		}, 60*time.Second, 5*time.Millisecond, "block %d", until)
		if round == 0 {
			// The first stop is clean, so that the kills that follow find a
			// chain whose state was once written out (a legacy path-scheme
			// chain then rewinds to that block, not to genesis).
			signalChild(syscall.SIGTERM)
		} else {
			signalChild(syscall.SIGKILL) // in the middle of block production, transactions flowing
		}
		cancel()
		wg.Wait()
		ec.Close()
		totalSent += sent
	}
	require.NotEmpty(t, seen, "transactions were mined before the kills")
	t.Logf("%d kills; %d transfers sent, %d seen mined before a kill; %d reopens came back without a transaction seen mined, %d more than a block below the highest block seen",
		kills, totalSent, len(seen), reopenedBelow, lostBlocks)
	return lostBlocks
}

// checkConsistent checks a reopened chain; it reports whether some
// transaction seen mined before the kill is no longer on the chain, and
// whether the chain reopened more than a block below the highest block seen
// (the block being sealed as the kill came may be lost; the one sealed when
// it reopened makes up for it).
func checkConsistent(t *testing.T, ec *ethclient.Client, sender common.Address, seen map[common.Hash]uint64) (below, lostBlocks bool) {
	t.Helper()
	ctx := context.Background()
	head, err := ec.BlockNumber(ctx)
	require.NoError(t, err)
	canonical := map[common.Hash]bool{}
	count := uint64(0)
	signer := types.LatestSignerForChainID(big.NewInt(devchain.DefaultChainID))
	for n := uint64(1); n <= head; n++ {
		b, err := ec.BlockByNumber(ctx, new(big.Int).SetUint64(n))
		require.NoError(t, err, "block %d of head %d", n, head)
		for i, tx := range b.Transactions() {
			canonical[tx.Hash()] = true
			from, err := types.Sender(signer, tx)
			require.NoError(t, err)
			if from == sender {
				require.Equal(t, count, tx.Nonce(), "block %d: the sender's nonces on the canonical chain run without gaps", n)
				count++
			}
			got, pending, err := ec.TransactionByHash(ctx, tx.Hash())
			require.NoError(t, err, "eth_getTransactionByHash %s (block %d)", tx.Hash(), n)
			require.False(t, pending)
			require.Equal(t, tx.Hash(), got.Hash())
			r, err := ec.TransactionReceipt(ctx, tx.Hash())
			require.NoError(t, err, "eth_getTransactionReceipt %s (block %d)", tx.Hash(), n)
			require.Equal(t, b.Hash(), r.BlockHash, "receipt of %s names its canonical block", tx.Hash())
			require.Equal(t, n, r.BlockNumber.Uint64())
			require.Equal(t, uint(i), r.TransactionIndex)
		}
	}
	latest, err := ec.NonceAt(ctx, sender, nil)
	require.NoError(t, err)
	require.Equal(t, count, latest, "eth_getTransactionCount(latest) counts the sender's canonical transactions (head %d)", head)

	maxSeen := uint64(0)
	for _, was := range seen {
		maxSeen = max(maxSeen, was)
	}
	t.Logf("reopened at head %d (highest block seen before: %d), sender nonce %d", head, maxSeen, latest)
	for h, was := range seen {
		if canonical[h] {
			continue
		}
		below = true
		_, _, err := ec.TransactionByHash(ctx, h)
		require.True(t, errors.Is(err, ethereum.NotFound), "a transaction seen mined in block %d and gone after the reopen (head %d) is not found, not an error: eth_getTransactionByHash %s: %v", was, head, h, err)
		_, err = ec.TransactionReceipt(ctx, h)
		require.True(t, errors.Is(err, ethereum.NotFound), "a transaction seen mined in block %d and gone after the reopen (head %d) has no receipt: eth_getTransactionReceipt %s: %v", was, head, h, err)
	}
	return below, head+1 < maxSeen
}

type ecdsaKey struct {
	addr common.Address
	sign func(types.TxData) *types.Transaction
}

func loadKey(t *testing.T, file string) *ecdsaKey {
	t.Helper()
	raw, err := os.ReadFile(file)
	require.NoError(t, err)
	k, err := crypto.HexToECDSA(strings.TrimSpace(string(raw)))
	require.NoError(t, err)
	signer := types.LatestSignerForChainID(big.NewInt(devchain.DefaultChainID))
	return &ecdsaKey{
		addr: crypto.PubkeyToAddress(k.PublicKey),
		sign: func(d types.TxData) *types.Transaction { return types.MustSignNewTx(k, signer, d) },
	}
}

// transfer sends 1 wei more in each round, so a transaction lost in a kill
// is not sent again with the same hash after the reopen.
func (k *ecdsaKey) transfer(nonce uint64, round int) *types.Transaction {
	to := common.HexToAddress("0x00000000000000000000000000000000000000bb")
	return k.sign(&types.DynamicFeeTx{
		ChainID: big.NewInt(devchain.DefaultChainID), Nonce: nonce, GasTipCap: big.NewInt(params.GWei), GasFeeCap: big.NewInt(100 * params.GWei),
		Gas: 21000, To: &to, Value: big.NewInt(int64(round) + 1),
	})
}

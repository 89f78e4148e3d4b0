package devchain_test

import (
	"context"
	"log/slog"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/dev/devchain"
	"github.com/keeperhq/keeper/internal/dev/testkit"
)

func bufLogger(b *testkit.SyncBuffer) *slog.Logger { return slog.New(slog.NewTextHandler(b, nil)) }

// headLead is how far the latest block's timestamp, read over JSON-RPC, is
// ahead of the clock (negative: behind).
func headLead(t *testing.T, ec *ethclient.Client) (uint64, time.Duration) {
	t.Helper()
	h, err := ec.HeaderByNumber(context.Background(), nil)
	require.NoError(t, err)
	return h.Number.Uint64(), time.Until(time.Unix(int64(h.Time), 0))
}

// Stands in for "after 10 minutes of keeper dev": at 20 blocks a second the
// old chain ran a second ahead every 50 ms.
func TestBlockTimestampsFollowTheWallClockWhateverTheBlockTime(t *testing.T) {
	c := start(t, devchain.Options{BlockTime: 50 * time.Millisecond, Persist: true})
	ec := dial(t, c.URL())
	first, _ := headLead(t, ec)
	var prev uint64
	require.Eventually(t, func() bool {
		n, lead := headLead(t, ec)
		assert.LessOrEqual(t, lead, 2*time.Second, "block %d is stamped ahead of the clock", n)
		assert.GreaterOrEqual(t, lead, -2*time.Second, "block %d is stamped behind the clock", n)
		if n > prev {
			prev = n
		}
		return n >= first+4
	}, 20*time.Second, 50*time.Millisecond, "blocks keep coming, about one a second")
	for n := uint64(1); n <= prev; n++ {
		h, err := ec.HeaderByNumber(context.Background(), new(big.Int).SetUint64(n))
		require.NoError(t, err)
		p, err := ec.HeaderByNumber(context.Background(), new(big.Int).SetUint64(n-1))
		require.NoError(t, err)
		assert.Greater(t, h.Time, p.Time, "timestamps strictly grow (block %d)", n)
	}
}

func TestAChainAnOlderKeeperLeftAheadOfTheClockIsKeptAndCatchesUp(t *testing.T) {
	dir := t.TempDir()
	old, err := devchain.Start(context.Background(), devchain.Options{Dir: dir, Persist: true, BlockTime: time.Hour, AheadOfClock: true})
	require.NoError(t, err)
	ec := dial(t, old.URL())
	tx := sendTransfer(t, old, ec, 0)
	require.NoError(t, old.Mine(40)) // 40 blocks in an instant: the clock runs about 40 s ahead
	before, err := ec.TransactionReceipt(context.Background(), tx.Hash())
	require.NoError(t, err)
	_, lead := headLead(t, ec)
	require.Greater(t, lead, 30*time.Second)
	require.NoError(t, old.Stop())

	var logs testkit.SyncBuffer
	c := start(t, devchain.Options{Dir: dir, Persist: true, BlockTime: 50 * time.Millisecond, Logger: bufLogger(&logs)})
	ec = dial(t, c.URL())
	after, err := ec.TransactionReceipt(context.Background(), tx.Hash())
	require.NoError(t, err, "the old chain is kept: its receipts still verify")
	assert.Equal(t, before.BlockHash, after.BlockHash)
	assert.Contains(t, logs.String(), "ahead of the clock")
	assert.Contains(t, logs.String(), "lead=")
	assert.Contains(t, logs.String(), filepath.Join(dir, "chain", "keeper"), "the log names the directory to delete")

	head, startLead := headLead(t, ec)
	require.Eventually(t, func() bool { n, _ := headLead(t, ec); return n >= head+2 }, 20*time.Second, 50*time.Millisecond,
		"the chain still seals blocks while it is ahead")
	_, nowLead := headLead(t, ec)
	assert.Less(t, nowLead, startLead, "the lead shrinks: blocks are a second apart but come every 2 s")
	assert.Greater(t, nowLead, 20*time.Second, "no block jumps back to the clock")
}

func TestAChainAnOlderKeeperKeptUnderItsBinarysNameIsMovedToTheFixedDirectory(t *testing.T) {
	dir := t.TempDir()
	restore := devchain.SetNodeName("keeperdev")
	old, err := devchain.Start(context.Background(), devchain.Options{Dir: dir, Persist: true, BlockTime: time.Hour})
	if err != nil {
		restore()
		require.NoError(t, err)
	}
	ec := dial(t, old.URL())
	tx := sendTransfer(t, old, ec, 0)
	require.NoError(t, old.Mine(2))
	require.NoError(t, old.Stop())
	restore()
	require.DirExists(t, filepath.Join(dir, "chain", "keeperdev", "chaindata"))

	var logs testkit.SyncBuffer
	c := start(t, devchain.Options{Dir: dir, Persist: true, BlockTime: time.Hour, Logger: bufLogger(&logs)})
	r, err := dial(t, c.URL()).TransactionReceipt(context.Background(), tx.Hash())
	require.NoError(t, err, "the same chain, not a new one from genesis")
	assert.Equal(t, uint64(1), r.Status)
	assert.DirExists(t, filepath.Join(dir, "chain", "keeper", "chaindata"))
	assert.NoDirExists(t, filepath.Join(dir, "chain", "keeperdev"))
	assert.Contains(t, logs.String(), "moved the chain")
	require.NoError(t, c.Stop())

	// Built under yet another name, keeper finds the same directory again.
	restore = devchain.SetNodeName("keeper")
	defer restore()
	again := start(t, devchain.Options{Dir: dir, Persist: true, BlockTime: time.Hour})
	_, err = dial(t, again.URL()).TransactionReceipt(context.Background(), tx.Hash())
	require.NoError(t, err)
}

func TestSeveralOldChainsAreNotGuessedBetween(t *testing.T) {
	dir := t.TempDir()
	restore := devchain.SetNodeName("keeper-a")
	c, err := devchain.Start(context.Background(), devchain.Options{Dir: dir, Persist: true, BlockTime: time.Hour})
	restore()
	require.NoError(t, err)
	require.NoError(t, c.Stop())
	require.NoError(t, os.CopyFS(filepath.Join(dir, "chain", "keeper-b"), os.DirFS(filepath.Join(dir, "chain", "keeper-a"))))

	var logs testkit.SyncBuffer
	start(t, devchain.Options{Dir: dir, Persist: true, BlockTime: time.Hour, Logger: bufLogger(&logs)})
	assert.Contains(t, logs.String(), "several chains")
	for _, name := range []string{"keeper-a", "keeper-b"} {
		_, err := os.Stat(filepath.Join(dir, "chain", name, "chaindata"))
		assert.NoError(t, err, "%s is left where it was", name)
	}
}

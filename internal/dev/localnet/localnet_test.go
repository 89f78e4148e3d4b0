package localnet

import (
	"context"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/params"
	"github.com/gagliardetto/solana-go"
	solrpc "github.com/gagliardetto/solana-go/rpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/config"
	"github.com/keeperhq/keeper/internal/dev/devchain"
	"github.com/keeperhq/keeper/receipt"
)

func TestNoLocalChainStartsWhereSeveralProvidersAreConfigured(t *testing.T) {
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.Chains = []string{"etherlink", "solana"}
	cfg.EVM.RPC.URLs = []string{"https://a.example", "https://b.example"}
	cfg.Solana.RPC.URLs = []string{"https://s1.example", "https://s2.example"}

	n, err := StartFor(context.Background(), &cfg, nil)
	require.NoError(t, err)
	assert.Nil(t, n, "the providers are the chains: no local chain, no dev key")
	assert.Empty(t, cfg.EVM.RPCURL)
	assert.Empty(t, cfg.Solana.RPCURL)
}

// keeper dev restarted on the same data directory finds both chains where
// they were: a transaction made before the restart is on each after it.
func TestBothLocalChainsGoOnWhereTheyStoppedAfterARestart(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	o := Options{Dir: dir, EVM: true, EVMBlock: 50 * time.Millisecond, Solana: true, SolanaSlot: 20 * time.Millisecond}
	n, err := Start(ctx, o)
	require.NoError(t, err)
	stopped := false
	defer func() {
		if !stopped {
			n.Stop()
		}
	}()

	// EVM: a transfer from the dev key.
	ec, err := ethclient.Dial(n.EVM.URL())
	require.NoError(t, err)
	key, err := crypto.HexToECDSA(readHex(t, EVMKeyFile(dir)))
	require.NoError(t, err)
	chainID := new(big.Int).SetUint64(n.EVM.ChainID())
	to := common.HexToAddress("0x00000000000000000000000000000000000000aa")
	etx := types.MustSignNewTx(key, types.LatestSignerForChainID(chainID), &types.DynamicFeeTx{
		ChainID: chainID, Nonce: 0, GasTipCap: big.NewInt(0), GasFeeCap: big.NewInt(10 * params.GWei), Gas: 21000, To: &to, Value: big.NewInt(1),
	})
	require.NoError(t, ec.SendTransaction(ctx, etx))
	var receipt *types.Receipt
	require.Eventually(t, func() bool {
		receipt, err = ec.TransactionReceipt(ctx, etx.Hash())
		return err == nil
	}, 20*time.Second, 50*time.Millisecond)
	ec.Close()

	// Solana: a memo from the fee payer.
	sc := solrpc.New(n.Solana.URL())
	payer := n.Solana.Payer()
	bh, err := sc.GetLatestBlockhash(ctx, solrpc.CommitmentFinalized)
	require.NoError(t, err)
	stx, err := solana.NewTransaction([]solana.Instruction{solana.NewInstruction(solana.MemoProgramID,
		solana.AccountMetaSlice{solana.Meta(payer.PublicKey()).SIGNER()}, []byte("keeper:v3 test"))},
		bh.Value.Blockhash, solana.TransactionPayer(payer.PublicKey()))
	require.NoError(t, err)
	_, err = stx.Sign(func(solana.PublicKey) *solana.PrivateKey { return &payer })
	require.NoError(t, err)
	sig, err := sc.SendTransaction(ctx, stx)
	require.NoError(t, err)
	var slot uint64
	require.Eventually(t, func() bool {
		tx, err := sc.GetTransaction(ctx, sig, &solrpc.GetTransactionOpts{Commitment: solrpc.CommitmentConfirmed})
		if err == nil {
			slot = tx.Slot
		}
		return err == nil
	}, 20*time.Second, 20*time.Millisecond)

	n.Stop()
	stopped = true
	assert.DirExists(t, filepath.Join(KeyDir(dir), "chain", "keeper", "chaindata"), "the EVM chain's directory does not depend on the binary's name")

	again, err := Start(ctx, o)
	require.NoError(t, err)
	defer again.Stop()
	ec, err = ethclient.Dial(again.EVM.URL())
	require.NoError(t, err)
	defer ec.Close()
	r, err := ec.TransactionReceipt(ctx, etx.Hash())
	require.NoError(t, err)
	assert.Equal(t, receipt.BlockHash, r.BlockHash)
	tx, err := solrpc.New(again.Solana.URL()).GetTransaction(ctx, sig, &solrpc.GetTransactionOpts{Commitment: solrpc.CommitmentConfirmed})
	require.NoError(t, err)
	assert.Equal(t, slot, tx.Slot)
}

// A chain directory an older keeper made runs with EtherLink mainnet's chain
// id and holds transactions signed for it: keeper dev refuses it, naming the
// data directory to delete, rather than reopen it under the local chain's id.
func TestKeeperDevRefusesAnOlderKeepersChainAndNamesTheDataDirectoryToDelete(t *testing.T) {
	dir := t.TempDir()
	old, err := Start(context.Background(), Options{Dir: dir, EVM: true, EVMBlock: time.Hour, EVMChainID: devchain.LegacyChainID})
	require.NoError(t, err)
	old.Stop()

	cfg := config.Default()
	cfg.DataDir = dir
	cfg.Chains = []string{"etherlink"}
	cfg.Dev.EVMPort = 0
	n, err := StartFor(context.Background(), &cfg, nil)
	require.Error(t, err)
	assert.Nil(t, n)
	assert.Equal(t, "local EVM chain: "+filepath.Join(dir, "chains", "chain")+" holds a chain made by an older keeper, with EtherLink mainnet's chain id 42793, "+
		"not the local chain's 7038309, and its transactions are signed for 42793, so it cannot be kept: stop keeper and delete the data directory "+dir+
		" (the chain and keeper's evidence log together, so that no trust root keeps an account the audit can no longer read; docs/chains.md, keeper dev's local chains)",
		err.Error())
	assert.DirExists(t, filepath.Join(dir, "chains", "chain", "keeper", "chaindata"), "nothing is deleted for the user")
}

func TestTheLocalEVMChainRunsWithItsOwnChainIDByDefault(t *testing.T) {
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.Chains = []string{"etherlink"}
	cfg.Dev.EVMPort = 0
	n, err := StartFor(context.Background(), &cfg, nil)
	require.NoError(t, err)
	defer n.Stop()
	assert.Equal(t, uint64(receipt.LocalEVMChainID), n.EVM.ChainID())
	assert.EqualValues(t, receipt.LocalEVMChainID, cfg.EVM.ChainID, "the adapter expects the chain's id")
}

func readHex(t *testing.T, path string) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	return strings.TrimSpace(string(raw))
}

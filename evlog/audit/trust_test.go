package audit_test

import (
	"context"
	"math/big"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"
	sol "github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/programs/system"
	"github.com/gagliardetto/solana-go/rpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/evlog/audit"
	"github.com/keeperhq/keeper/evlog/trust"
	"github.com/keeperhq/keeper/internal/chains"
	"github.com/keeperhq/keeper/internal/chains/solana"
	"github.com/keeperhq/keeper/internal/dev/testkit"
	"github.com/keeperhq/keeper/receipt"
)

// trustRoot is the root a worker of f lists: its accounts on both chains'
// networks, from size 0.
func (f *fixture) trustRoot(t *testing.T) trust.Root {
	t.Helper()
	r, err := trust.New(f.signer.Key().Text, time.Now())
	require.NoError(t, err)
	for _, chain := range bothChains {
		network, err := chains.NetworkOf(context.Background(), f.chains[chain])
		require.NoError(t, err)
		r.List(chain, network, chains.AccountOf(f.chains[chain]), 0, time.Now())
	}
	return r
}

// withTrust audits with the root pinned and nothing else: the endpoints
// only.
func withTrust(root trust.Root) func(*audit.Options) {
	return func(o *audit.Options) { o.Trust, o.Key = &root, nil }
}

func TestACleanLogAuditedWithItsTrustRootHasNoFindings(t *testing.T) {
	f := anchoredLog(t)
	r := f.audit(t, f.serve(t), withTrust(f.trustRoot(t)))
	_, all := kinds(r)
	assert.True(t, r.OK(), all)
	assert.True(t, r.Trusted)
	assert.Equal(t, map[string]int{"etherlink": 2, "solana": 2}, r.Anchors)
	assert.Equal(t, 2, r.Checkpoints)

	t.Run("an anchor keeper lists from an account the root does not list is a finding", func(t *testing.T) {
		root := f.trustRoot(t)
		root.Accounts = root.Accounts[:1] // etherlink only
		r := f.audit(t, f.serve(t), withTrust(root))
		ks, all := kinds(r)
		assert.Equal(t, []string{audit.KindAccount, audit.KindAccount}, ks, all)
		assert.Contains(t, all, "account: solana: keeper lists tx ")
		assert.Contains(t, all, "the pinned trust root lists no anchoring account on solana:")
		assert.Equal(t, map[string]int{"etherlink": 2}, r.Anchors, "only the listed accounts are read")
	})
}

// TestTheTrustRootsAccountsAreReadEvenWhenKeeperListsNone is a split view:
// the operator anchors a second history of the log from an account the
// trust root lists (the EVM account it rotated to at 306 entries), and
// keeper's own list of anchors never names it. The short form reads only
// the accounts keeper lists and sees nothing; the trust root's audit reads
// the account and finds the fork.
func TestTheTrustRootsAccountsAreReadEvenWhenKeeperListsNone(t *testing.T) {
	f := anchoredLog(t) // 315 entries
	second := newFixture(t)
	root := f.trustRoot(t)
	evmNet, err := chains.NetworkOf(context.Background(), f.chains["etherlink"])
	require.NoError(t, err)
	require.True(t, root.List("etherlink", evmNet, chains.AccountOf(second.chains["etherlink"]), 306, time.Now()))

	var other [32]byte
	other[0] = 7
	fork := receipt.CheckpointRef{KeyHash: f.signer.Key().Hash, Size: 315, Root: other}
	tx := second.sendUnlisted(t, "etherlink", fork)

	short := f.audit(t, f.serve(t))
	_, all := kinds(short)
	assert.True(t, short.OK(), "the short form reads keeper's own accounts only: %s", all)

	r := f.audit(t, f.serve(t), withTrust(root))
	ks, all := kinds(r)
	assert.Contains(t, ks, audit.KindFork, all)
	assert.Contains(t, all, tx)
	assert.NotContains(t, ks, audit.KindAccount, "the account is listed for 315 entries: %s", all)
	assert.Equal(t, 3, r.Anchors["etherlink"])

	t.Run("and a rotated-out account's later anchor is a finding", func(t *testing.T) {
		late := root
		late.Accounts = append([]trust.Account(nil), root.Accounts...)
		// The first account anchored 5 and 305; listed only below 6, its 305 is not its to anchor.
		late.Accounts[0].Sizes.End = new(uint64)
		*late.Accounts[0].Sizes.End = 6
		late.Accounts[2].Sizes.Start = 6
		r := f.audit(t, f.serve(t), withTrust(late))
		ks, all := kinds(r)
		assert.Contains(t, ks, audit.KindAccount, all)
		assert.Contains(t, all, "a checkpoint of 305 entries")
	})
}

func TestAListedAccountThatCannotBeReadIsAFinding(t *testing.T) {
	f := anchoredLog(t)
	t.Run("a network no endpoint is on", func(t *testing.T) {
		root := f.trustRoot(t)
		root.List("etherlink", "eip155:1", "0xcccc000000000000000000000000000000000003", 0, time.Now())
		r := f.audit(t, f.serve(t), withTrust(root))
		ks, all := kinds(r)
		assert.Equal(t, []string{audit.KindUnread}, ks, all)
		assert.Contains(t, all, "cannot read eip155:1:0xcccc000000000000000000000000000000000003")
		assert.Contains(t, all, "an endpoint is on eip155:")
	})
	t.Run("an endpoint that does not answer", func(t *testing.T) {
		down := "http://" + testkit.ClosedAddr(t)
		r := f.audit(t, f.serve(t), withTrust(f.trustRoot(t)), func(o *audit.Options) {
			o.Chains[1].RPC = down
		})
		ks, all := kinds(r)
		assert.Equal(t, []string{audit.KindUnread}, ks, all)
		assert.Contains(t, all, "unread: solana: cannot read solana:")
	})
	t.Run("no anchor read at all", func(t *testing.T) {
		empty := newFixture(t)
		empty.grow(t, 3)
		r := empty.audit(t, empty.serve(t), withTrust(empty.trustRoot(t)))
		ks, all := kinds(r)
		assert.Equal(t, []string{audit.KindUnread}, ks, all)
		assert.Contains(t, all, "no checkpoint anchor was read")
	})
}

// TestOthersTransactionsToTheAnchoringAccountsAreNotTheirAnchors: anyone
// can send keeper's Solana fee payer a lamport with a keeper memo, and
// keeper's EVM account a transaction whose calldata is a keeper payload.
// Neither is keeper's anchor: the audit reads them as nobody's and still
// reads all of keeper's own.
func TestOthersTransactionsToTheAnchoringAccountsAreNotTheirAnchors(t *testing.T) {
	f := anchoredLog(t)
	ctx := context.Background()
	bogus := receipt.CheckpointRef{KeyHash: f.signer.Key().Hash, Size: 1_000_000_000, Root: [32]byte{9}}

	outsider, err := solChain.NewFundedKey(1_000_000_000)
	require.NoError(t, err)
	c := rpc.New(solChain.URL())
	defer c.Close()
	var last sol.Signature
	for i := range 70 { // more than a worker's old look-back of 64
		bh, err := c.GetLatestBlockhash(ctx, rpc.CommitmentFinalized)
		require.NoError(t, err)
		memo := receipt.SolanaCheckpointMemoForBatch(bogus, int64(i))
		tx, err := sol.NewTransaction([]sol.Instruction{
			system.NewTransferInstruction(1, outsider.PublicKey(), f.payer.PublicKey()).Build(),
			sol.NewInstruction(solana.MemoProgramID, sol.AccountMetaSlice{sol.Meta(outsider.PublicKey()).SIGNER()}, []byte(memo)),
		}, bh.Value.Blockhash, sol.TransactionPayer(outsider.PublicKey()))
		require.NoError(t, err)
		_, err = tx.Sign(func(k sol.PublicKey) *sol.PrivateKey { return &outsider })
		require.NoError(t, err)
		last, err = c.SendTransaction(ctx, tx)
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool {
		st, err := c.GetSignatureStatuses(ctx, false, last)
		return err == nil && st.Value[0] != nil && st.Value[0].ConfirmationStatus == rpc.ConfirmationStatusFinalized
	}, 30*time.Second, 20*time.Millisecond)

	ec, err := ethclient.Dial(evmChain.URL())
	require.NoError(t, err)
	defer ec.Close()
	key := evmKeys[int(nextKey.Add(1))-1]
	from := crypto.PubkeyToAddress(key.PublicKey)
	to := common.HexToAddress(chains.AccountOf(f.chains["etherlink"]))
	nonce, err := ec.PendingNonceAt(ctx, from)
	require.NoError(t, err)
	tip, err := ec.SuggestGasTipCap(ctx)
	require.NoError(t, err)
	head, err := ec.HeaderByNumber(ctx, nil)
	require.NoError(t, err)
	id, err := ec.ChainID(ctx)
	require.NoError(t, err)
	etx, err := types.SignNewTx(key, types.LatestSignerForChainID(id), &types.DynamicFeeTx{ChainID: id, Nonce: nonce, To: &to,
		Gas: 100_000, GasTipCap: tip, GasFeeCap: new(big.Int).Add(new(big.Int).Mul(head.BaseFee, big.NewInt(2)), tip), Data: receipt.EVMCheckpointCalldata(bogus)})
	require.NoError(t, err)
	require.NoError(t, ec.SendTransaction(ctx, etx))
	require.Eventually(t, func() bool {
		rc, err := ec.TransactionReceipt(ctx, etx.Hash())
		return err == nil && rc.Status == types.ReceiptStatusSuccessful
	}, 30*time.Second, 20*time.Millisecond)

	r := f.audit(t, f.serve(t), withTrust(f.trustRoot(t)))
	_, all := kinds(r)
	assert.True(t, r.OK(), all)
	assert.Equal(t, map[string]int{"etherlink": 2, "solana": 2}, r.Anchors, "keeper's own anchors, and no one else's")
}

package receipttest

import (
	"context"
	"crypto/ecdsa"
	"fmt"
	"math/big"
	"time"

	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"
	sol "github.com/gagliardetto/solana-go"
	solrpc "github.com/gagliardetto/solana-go/rpc"

	"github.com/keeperhq/keeper/receipt"
	"github.com/keeperhq/keeper/receipt/verify"
)

// FinalWithin bounds how long Send* wait for a transaction to be final.
const FinalWithin = 30 * time.Second

// SignEVM signs what keeper sends as an EVM anchor: a 0-value EIP-1559
// transaction from key to itself carrying data.
func SignEVM(key *ecdsa.PrivateKey, chainID, nonce uint64, data []byte) (*types.Transaction, error) {
	from := crypto.PubkeyToAddress(key.PublicKey)
	id := new(big.Int).SetUint64(chainID)
	return types.SignNewTx(key, types.LatestSignerForChainID(id), &types.DynamicFeeTx{
		ChainID: id, Nonce: nonce, GasTipCap: big.NewInt(1e9), GasFeeCap: big.NewInt(100e9), Gas: 100_000, To: &from, Data: data,
	})
}

// AnchorEVM sends data from key to the EVM node at url (SignEVM, at the
// account's pending nonce) and returns the anchor once final.
func AnchorEVM(ctx context.Context, url string, key *ecdsa.PrivateKey, data []byte) (receipt.AnchorRow, error) {
	ec, err := ethclient.DialContext(ctx, url)
	if err != nil {
		return receipt.AnchorRow{}, err
	}
	defer ec.Close()
	chainID, err := ec.ChainID(ctx)
	if err != nil {
		return receipt.AnchorRow{}, err
	}
	nonce, err := ec.PendingNonceAt(ctx, crypto.PubkeyToAddress(key.PublicKey))
	if err != nil {
		return receipt.AnchorRow{}, err
	}
	tx, err := SignEVM(key, chainID.Uint64(), nonce, data)
	if err != nil {
		return receipt.AnchorRow{}, err
	}
	return SendEVM(ctx, url, tx)
}

// SendEVM sends a signed transaction to the EVM node at url and returns its
// anchor (chain "etherlink") once verify.EVM calls it final there.
func SendEVM(ctx context.Context, url string, tx *types.Transaction) (receipt.AnchorRow, error) {
	ec, err := ethclient.DialContext(ctx, url)
	if err != nil {
		return receipt.AnchorRow{}, err
	}
	defer ec.Close()
	if err := ec.SendTransaction(ctx, tx); err != nil {
		return receipt.AnchorRow{}, fmt.Errorf("receipttest: send to %s: %w", url, err)
	}
	return waitFinal(ctx, "etherlink", func() (verify.Tx, error) { return verify.EVM(ctx, url, tx.Hash().Hex()) }, tx.Hash().Hex())
}

// AnchorSolana sends memo in a transaction paid by payer to the Solana node
// at url and returns the anchor (chain "solana") once finalized.
func AnchorSolana(ctx context.Context, url string, payer sol.PrivateKey, memo string) (receipt.AnchorRow, error) {
	c := solrpc.New(url)
	defer c.Close()
	bh, err := c.GetLatestBlockhash(ctx, solrpc.CommitmentFinalized)
	if err != nil {
		return receipt.AnchorRow{}, err
	}
	tx, err := sol.NewTransaction([]sol.Instruction{sol.NewInstruction(sol.MemoProgramID, nil, []byte(memo))},
		bh.Value.Blockhash, sol.TransactionPayer(payer.PublicKey()))
	if err != nil {
		return receipt.AnchorRow{}, err
	}
	if _, err := tx.Sign(func(sol.PublicKey) *sol.PrivateKey { return &payer }); err != nil {
		return receipt.AnchorRow{}, err
	}
	sig, err := c.SendTransaction(ctx, tx)
	if err != nil {
		return receipt.AnchorRow{}, fmt.Errorf("receipttest: send to %s: %w", url, err)
	}
	return waitFinal(ctx, "solana", func() (verify.Tx, error) { return verify.Solana(ctx, url, sig.String()) }, sig.String())
}

func waitFinal(ctx context.Context, chain string, look func() (verify.Tx, error), ref string) (receipt.AnchorRow, error) {
	deadline := time.Now().Add(FinalWithin)
	for {
		got, err := look()
		if err != nil {
			return receipt.AnchorRow{}, err
		}
		if got.Final {
			return receipt.AnchorRow{Chain: chain, Network: got.Network, TxRef: ref, Block: got.Block, BlockHash: got.BlockHash,
				BlockTime: got.BlockTime, Finality: "finalized", Account: got.Sender}, nil
		}
		if time.Now().After(deadline) {
			return receipt.AnchorRow{}, fmt.Errorf("receipttest: %s %s not final within %s: %s", chain, ref, FinalWithin, got.Detail)
		}
		select {
		case <-ctx.Done():
			return receipt.AnchorRow{}, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

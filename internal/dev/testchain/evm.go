// Package testchain builds wallet histories on keeper's local chains for the
// backfill tests: a wallet with native and token transfers in both
// directions, fees, a failed transaction and unrelated traffic, and the list
// of what a backfill must find. The test ERC-20 token is deployed from the
// committed bytecode in testdata (see testdata/compile.sh).
package testchain

import (
	"context"
	"crypto/ecdsa"
	_ "embed"
	"fmt"
	"math/big"
	"os"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"

	"github.com/keeperhq/keeper/internal/backfill/scan"
)

//go:embed testdata/Token.bin
var tokenBin string

// TokenBytecode is the compiled creation code of testdata/Token.sol.
func TokenBytecode() []byte { return common.FromHex(strings.TrimSpace(tokenBin)) }

// Expected is a transfer a backfill must find (fees are checked through the
// balances).
type Expected struct {
	Tx        string
	Kind      scan.Kind
	Asset     string
	From, To  string
	Amount    *big.Int
	Direction scan.Direction
}

// EVMChain is a local EVM chain whose blocks a history's builder seals
// itself: a devchain.Chain with a long BlockTime, or an Anvil.
type EVMChain interface {
	URL() string
	ChainID() uint64
	KeyFile() string // holds a funded account's hex private key
	Mine(n int) error
	Head() uint64
	Finalized() uint64
}

// EVMHistory is a wallet's history on a local EVM chain.
type EVMHistory struct {
	Wallet   common.Address
	Token    common.Address
	Expected []Expected    // native and token transfers of the wallet
	Sent     []common.Hash // transactions the wallet signed (each paid a fee)
	Head     uint64        // last block with the wallet's activity; all of it is final
}

// EVMOptions shape the history.
type EVMOptions struct {
	Rounds         int // rounds of traffic (≈ 4.6 wallet transfers each)
	BlocksPerRound int // blocks sealed after each round
	// Wallet is the account the history is of, such as one funded at
	// genesis; nil: a fresh one.
	Wallet *ecdsa.PrivateKey
}

// evmActor signs and sends transactions from one key, counting its nonce.
type evmActor struct {
	key   *ecdsa.PrivateKey
	addr  common.Address
	nonce uint64
}

type evmBuilder struct {
	ctx      context.Context
	c        EVMChain
	ec       *ethclient.Client
	chainID  *big.Int
	h        *EVMHistory
	unsealed []common.Hash // sent, not yet seen in a block
}

// BuildEVMHistory gives a wallet (a fresh one unless o.Wallet) a history on c:
// deposits from the dev key in native coin and tokens, payments to a
// counterparty in both, a token allowance the counterparty spends, transfers
// to itself, a reverted token transfer (fee only), and unrelated traffic
// between the other two. It seals blocks itself (run c with a long
// BlockTime) and ends with everything final.
func BuildEVMHistory(ctx context.Context, c EVMChain, o EVMOptions) (*EVMHistory, error) {
	ec, err := ethclient.DialContext(ctx, c.URL())
	if err != nil {
		return nil, err
	}
	defer ec.Close()
	raw, err := os.ReadFile(c.KeyFile())
	if err != nil {
		return nil, err
	}
	devKey, err := crypto.HexToECDSA(strings.TrimSpace(string(raw)))
	if err != nil {
		return nil, fmt.Errorf("dev key: %w", err)
	}
	b := &evmBuilder{ctx: ctx, c: c, ec: ec, chainID: new(big.Int).SetUint64(c.ChainID()), h: &EVMHistory{}}
	dev, err := b.actor(devKey)
	if err != nil {
		return nil, err
	}
	wallet, err := b.newActor()
	if o.Wallet != nil {
		wallet, err = b.actor(o.Wallet)
	}
	if err != nil {
		return nil, err
	}
	other, err := b.newActor()
	if err != nil {
		return nil, err
	}
	b.h.Wallet = wallet.addr
	ether := big.NewInt(1e18)

	supply := new(big.Int).Mul(big.NewInt(1e9), ether)
	deploy, err := b.send(dev, nil, nil, append(TokenBytecode(), common.LeftPadBytes(supply.Bytes(), 32)...), 2_000_000)
	if err != nil {
		return nil, err
	}
	if err := b.native(dev, wallet, new(big.Int).Mul(big.NewInt(10), ether)); err != nil {
		return nil, err
	}
	if err := b.native(dev, other, new(big.Int).Mul(big.NewInt(10), ether)); err != nil {
		return nil, err
	}
	if err := b.seal(1); err != nil {
		return nil, err
	}
	r, err := ec.TransactionReceipt(ctx, deploy)
	if err != nil {
		return nil, fmt.Errorf("token deployment receipt: %w", err)
	}
	b.h.Token = r.ContractAddress
	// The counterparty may spend the wallet's tokens: approve emits Approval,
	// not Transfer, so the wallet only pays its fee.
	if _, err := b.call(wallet, b.h.Token, approveData(other.addr, maxUint256())); err != nil {
		return nil, err
	}

	for round := 0; round < o.Rounds; round++ {
		if err := b.round(round, dev, wallet, other, supply); err != nil {
			return nil, err
		}
		if err := b.seal(max(o.BlocksPerRound-1, 1)); err != nil {
			return nil, err
		}
	}
	if err := b.checkReceipts(); err != nil {
		return nil, err
	}
	b.h.Head = c.Head()
	// Seal until the last round is final.
	for c.Finalized() < b.h.Head {
		if err := c.Mine(int(b.h.Head - c.Finalized())); err != nil {
			return nil, err
		}
	}
	return b.h, nil
}

// round sends one round of the history's transfers: deposits to the wallet,
// its payments a block later, unrelated traffic, and every few rounds a
// counterparty's spend of its tokens, a transfer to itself and a revert.
func (b *evmBuilder) round(round int, dev, wallet, other *evmActor, supply *big.Int) error {
	n := big.NewInt(int64(round + 1))
	steps := []func() error{
		func() error { return b.native(dev, wallet, new(big.Int).Add(big.NewInt(1e15), n)) },
		func() error { return b.token(dev, dev, wallet, new(big.Int).Add(big.NewInt(1000), n)) },
		func() error { return b.native(wallet, other, new(big.Int).Add(big.NewInt(1e12), n)) },
		func() error { return b.token(wallet, wallet, other, new(big.Int).Add(big.NewInt(10), n)) },
		// unrelated traffic
		func() error { return b.native(dev, other, new(big.Int).Add(big.NewInt(7e12), n)) },
		func() error { return b.token(dev, dev, other, new(big.Int).Add(big.NewInt(77), n)) },
		func() error { return b.native(other, dev, new(big.Int).Add(big.NewInt(3e11), n)) },
	}
	if round%5 == 0 { // the counterparty moves the wallet's tokens
		steps = append(steps, func() error { return b.token(other, wallet, other, new(big.Int).Add(big.NewInt(3), n)) })
	}
	if round%7 == 0 { // to itself
		steps = append(steps, func() error { return b.native(wallet, wallet, n) })
	}
	if round%10 == 0 { // reverted: more tokens than it has; the fee is still paid
		steps = append(steps, func() error {
			_, err := b.call(wallet, b.h.Token, transferData(other.addr, supply))
			return err
		})
	}
	// Deposits land a block before the payments that spend them.
	for i, step := range steps {
		if i == 2 {
			if err := b.seal(1); err != nil {
				return err
			}
		}
		if err := step(); err != nil {
			return fmt.Errorf("round %d: %w", round, err)
		}
	}
	return nil
}

func (b *evmBuilder) actor(key *ecdsa.PrivateKey) (*evmActor, error) {
	addr := crypto.PubkeyToAddress(key.PublicKey)
	nonce, err := b.ec.PendingNonceAt(b.ctx, addr)
	if err != nil {
		return nil, err
	}
	return &evmActor{key: key, addr: addr, nonce: nonce}, nil
}

func (b *evmBuilder) newActor() (*evmActor, error) {
	key, err := crypto.GenerateKey()
	if err != nil {
		return nil, err
	}
	return &evmActor{key: key, addr: crypto.PubkeyToAddress(key.PublicKey)}, nil
}

// send signs and broadcasts one transaction (to nil: a deployment).
func (b *evmBuilder) send(from *evmActor, to *common.Address, value *big.Int, data []byte, gas uint64) (common.Hash, error) {
	if value == nil {
		value = new(big.Int)
	}
	tx, err := types.SignNewTx(from.key, types.LatestSignerForChainID(b.chainID), &types.DynamicFeeTx{
		ChainID: b.chainID, Nonce: from.nonce, GasTipCap: big.NewInt(1e9), GasFeeCap: big.NewInt(20e9),
		Gas: gas, To: to, Value: value, Data: data,
	})
	if err != nil {
		return common.Hash{}, err
	}
	// geth's pool takes a new head asynchronously: right after a seal it
	// may still judge a just-funded sender by the block before.
	for try := 0; ; try++ {
		err = b.ec.SendTransaction(b.ctx, tx)
		if err == nil || try == 100 || !strings.Contains(err.Error(), "insufficient funds") {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		return common.Hash{}, fmt.Errorf("send from %s nonce %d: %w", from.addr.Hex(), from.nonce, err)
	}
	from.nonce++
	if from.addr == b.h.Wallet {
		b.h.Sent = append(b.h.Sent, tx.Hash())
	}
	b.unsealed = append(b.unsealed, tx.Hash())
	return tx.Hash(), nil
}

// seal seals n blocks, more if a transaction sent since the last seal is
// not in one yet (the pool may still be promoting it).
func (b *evmBuilder) seal(n int) error {
	for sealed := 0; sealed < n || len(b.unsealed) > 0; sealed++ {
		if sealed > n+20 {
			return fmt.Errorf("transaction %s never made it into a block", b.unsealed[0].Hex())
		}
		if err := b.c.Mine(1); err != nil {
			return err
		}
		for len(b.unsealed) > 0 {
			if _, err := b.ec.TransactionReceipt(b.ctx, b.unsealed[0]); err != nil {
				break
			}
			b.unsealed = b.unsealed[1:]
		}
	}
	return nil
}

func (b *evmBuilder) native(from, to *evmActor, value *big.Int) error {
	h, err := b.send(from, &to.addr, value, nil, 21_000)
	if err != nil {
		return err
	}
	b.expect(h, scan.KindNative, scan.NativeAsset, from.addr, to.addr, value)
	return nil
}

// token moves tokens from owner to to, sent by spender (transferFrom when
// spender is not the owner).
func (b *evmBuilder) token(spender, owner, to *evmActor, value *big.Int) error {
	data := transferData(to.addr, value)
	if spender != owner {
		data = transferFromData(owner.addr, to.addr, value)
	}
	h, err := b.call(spender, b.h.Token, data)
	if err != nil {
		return err
	}
	b.expect(h, scan.KindToken, strings.ToLower(b.h.Token.Hex()), owner.addr, to.addr, value)
	return nil
}

// call sends a contract call with enough gas not to need an estimate (which
// fails for a call meant to revert).
func (b *evmBuilder) call(from *evmActor, to common.Address, data []byte) (common.Hash, error) {
	return b.send(from, &to, nil, data, 300_000)
}

func (b *evmBuilder) expect(h common.Hash, kind scan.Kind, asset string, from, to common.Address, value *big.Int) {
	w := b.h.Wallet
	if from != w && to != w {
		return
	}
	dir := scan.In
	switch {
	case from == w && to == w:
		dir = scan.Self
	case from == w:
		dir = scan.Out
	}
	b.h.Expected = append(b.h.Expected, Expected{
		Tx: h.Hex(), Kind: kind, Asset: asset, From: strings.ToLower(from.Hex()), To: strings.ToLower(to.Hex()),
		Amount: new(big.Int).Set(value), Direction: dir,
	})
}

// checkReceipts makes sure every expected transfer landed and succeeded, so
// the history is what the test thinks it is.
func (b *evmBuilder) checkReceipts() error {
	for _, e := range b.h.Expected {
		r, err := b.ec.TransactionReceipt(b.ctx, common.HexToHash(e.Tx))
		if err != nil {
			return fmt.Errorf("receipt of %s: %w", e.Tx, err)
		}
		if r.Status != types.ReceiptStatusSuccessful {
			return fmt.Errorf("transfer %s (%s %s → %s, %s) reverted", e.Tx, e.Kind, e.From, e.To, e.Amount)
		}
	}
	return nil
}

func transferData(to common.Address, v *big.Int) []byte {
	return append(common.FromHex("0xa9059cbb"), append(common.LeftPadBytes(to.Bytes(), 32), common.LeftPadBytes(v.Bytes(), 32)...)...)
}

func transferFromData(from, to common.Address, v *big.Int) []byte {
	out := common.FromHex("0x23b872dd")
	out = append(out, common.LeftPadBytes(from.Bytes(), 32)...)
	out = append(out, common.LeftPadBytes(to.Bytes(), 32)...)
	return append(out, common.LeftPadBytes(v.Bytes(), 32)...)
}

func approveData(spender common.Address, v *big.Int) []byte {
	return append(common.FromHex("0x095ea7b3"), append(common.LeftPadBytes(spender.Bytes(), 32), common.LeftPadBytes(v.Bytes(), 32)...)...)
}

func maxUint256() *big.Int {
	return new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 256), big.NewInt(1))
}

// EVMBalance returns the wallet's native balance at block n.
func EVMBalance(ctx context.Context, url string, wallet common.Address, n uint64) (*big.Int, error) {
	ec, err := ethclient.DialContext(ctx, url)
	if err != nil {
		return nil, err
	}
	defer ec.Close()
	return ec.BalanceAt(ctx, wallet, new(big.Int).SetUint64(n))
}

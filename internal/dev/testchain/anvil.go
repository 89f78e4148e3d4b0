package testchain

import (
	"context"
	"crypto/ecdsa"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/rpc"

	"github.com/keeperhq/keeper/internal/dev/testkit"
)

// AnvilKeys are the private keys of anvil's first dev accounts, funded at
// genesis with the --balance of every dev account (public test keys, in
// every foundry install).
var AnvilKeys = []string{
	"ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80",
	"59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d",
	"5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a",
}

// AnvilKey is AnvilKeys[i] as a key.
func AnvilKey(i int) *ecdsa.PrivateKey {
	k, err := crypto.HexToECDSA(AnvilKeys[i])
	if err != nil {
		panic(err)
	}
	return k
}

// AnvilOptions start an anvil.
type AnvilOptions struct {
	Bin     string // the anvil binary
	Dir     string // where its funded key file goes
	Port    int
	ChainID uint64
	Args    []string // more flags
}

// Anvil is an anvil process (foundry's EVM node): a real node, with its own
// ideas of which blocks' state it keeps. It mines a block per transaction
// and whatever Mine asks for. It satisfies EVMChain.
type Anvil struct {
	o    AnvilOptions
	url  string
	key  string
	cmd  *exec.Cmd
	done chan struct{}
	out  testkit.SyncBuffer
	rpc  *rpc.Client
}

var _ EVMChain = (*Anvil)(nil)

// StartAnvil runs anvil on 127.0.0.1:o.Port with o.ChainID and o.Args, and
// waits until it answers JSON-RPC.
func StartAnvil(ctx context.Context, o AnvilOptions) (*Anvil, error) {
	a := &Anvil{o: o, url: "http://127.0.0.1:" + strconv.Itoa(o.Port), key: filepath.Join(o.Dir, "anvil.key"), done: make(chan struct{})}
	if err := os.WriteFile(a.key, []byte(AnvilKeys[0]+"\n"), 0o600); err != nil {
		return nil, err
	}
	args := append([]string{"--host", "127.0.0.1", "--port", strconv.Itoa(o.Port), "--chain-id", strconv.FormatUint(o.ChainID, 10)}, o.Args...)
	a.cmd = exec.Command(o.Bin, args...)
	a.cmd.Stdout, a.cmd.Stderr = &a.out, &a.out
	if err := a.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { _ = a.cmd.Wait(); close(a.done) }()
	var err error
	if a.rpc, err = rpc.DialContext(ctx, a.url); err != nil {
		a.Stop()
		return nil, err
	}
	for deadline := time.Now().Add(15 * time.Second); ; {
		var id hexutil.Uint64
		err := a.rpc.CallContext(ctx, &id, "eth_chainId")
		if err == nil {
			return a, nil
		}
		select {
		case <-a.done:
			return nil, fmt.Errorf("anvil exited: %s", a.out.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			a.Stop()
			return nil, fmt.Errorf("anvil did not answer JSON-RPC: %w", err)
		}
	}
}

// Stop interrupts anvil, and kills it if it has not exited 5 s later.
func (a *Anvil) Stop() {
	if a.rpc != nil {
		a.rpc.Close()
	}
	_ = a.cmd.Process.Signal(os.Interrupt)
	select {
	case <-a.done:
	case <-time.After(5 * time.Second):
		_ = a.cmd.Process.Kill()
		<-a.done
	}
}

// Output is what anvil printed.
func (a *Anvil) Output() string { return a.out.String() }

// URL is its JSON-RPC endpoint.
func (a *Anvil) URL() string { return a.url }

// ChainID is the chain id it runs.
func (a *Anvil) ChainID() uint64 { return a.o.ChainID }

// KeyFile holds AnvilKeys[0], a funded account's key.
func (a *Anvil) KeyFile() string { return a.key }

// Mine mines n blocks at once (anvil_mine).
func (a *Anvil) Mine(n int) error {
	return a.rpc.Call(nil, "anvil_mine", hexutil.EncodeUint64(uint64(n)))
}

// Head is the latest block's number (0 if anvil does not answer).
func (a *Anvil) Head() uint64 { return a.block("latest") }

// Finalized is the finalized block's number (0 if anvil does not answer).
func (a *Anvil) Finalized() uint64 { return a.block("finalized") }

func (a *Anvil) block(tag string) uint64 {
	var h *struct {
		Number hexutil.Uint64 `json:"number"`
	}
	if err := a.rpc.Call(&h, "eth_getBlockByNumber", tag, false); err != nil || h == nil {
		return 0
	}
	return uint64(h.Number)
}

package cli

import (
	"context"
	"os"

	"github.com/keeperhq/keeper/chains"
	"github.com/keeperhq/keeper/chains/evm"
	"github.com/keeperhq/keeper/chains/solana"
)

func init() {
	Verifiers["etherlink"] = ChainVerifier{
		Verify: func(ctx context.Context, rpcURL, ref string) (chains.Verification, error) {
			v, err := evm.VerifyTx(ctx, rpcURL, ref)
			return chains.Verification{Found: v.Found, Succeeded: v.Succeeded, Final: v.Final, Root: v.Root, Block: v.Block, Detail: v.Detail}, err
		},
		DefaultRPC: func() string { return envOr("KEEPER_EVM_RPC_URL", "http://127.0.0.1:8545") },
	}
	Verifiers[solana.Name] = ChainVerifier{
		Verify: func(ctx context.Context, rpcURL, ref string) (chains.Verification, error) {
			v, err := solana.VerifyTx(ctx, rpcURL, ref)
			return chains.Verification{Found: v.Found, Succeeded: v.Succeeded, Final: v.Final, Root: v.Root, Block: v.Block, Detail: v.Detail}, err
		},
		DefaultRPC: func() string { return envOr("KEEPER_SOLANA_RPC_URL", "http://127.0.0.1:8899") },
	}
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

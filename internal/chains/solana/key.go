package solana

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"

	sol "github.com/gagliardetto/solana-go"

	"github.com/keeperhq/keeper/internal/redact"
)

// LoadKey reads a keypair file in the standard Solana format (what
// `solana-keygen new` writes): a JSON array of the 64 bytes of an ed25519
// keypair, secret seed then public key. Errors name the file, never its
// content.
func LoadKey(path string) (sol.PrivateKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("solana: read key file: %w", err)
	}
	defer clear(b)
	var nums []int
	if err := json.Unmarshal(b, &nums); err != nil {
		clear(nums)
		return nil, fmt.Errorf("solana: key file %s is not a JSON array of 64 numbers", path)
	}
	defer clear(nums)
	if len(nums) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("solana: key file %s holds %d numbers, want %d", path, len(nums), ed25519.PrivateKeySize)
	}
	key := make(sol.PrivateKey, len(nums))
	for i, n := range nums {
		if n < 0 || n > 255 {
			clear(key)
			return nil, fmt.Errorf("solana: key file %s holds a number outside 0..255", path)
		}
		key[i] = byte(n)
	}
	if err := checkKey(key); err != nil {
		clear(key)
		return nil, fmt.Errorf("solana: key file %s: %w", path, err)
	}
	return key, nil
}

// checkKey reports whether k is a usable ed25519 keypair whose public half
// matches its seed. Its errors never include key material.
func checkKey(k sol.PrivateKey) error {
	if len(k) == 0 {
		return errors.New("solana: no payer key configured")
	}
	if len(k) != ed25519.PrivateKeySize {
		return fmt.Errorf("solana: payer key must be %d bytes, got %d", ed25519.PrivateKeySize, len(k))
	}
	derived := ed25519.NewKeyFromSeed(k[:ed25519.SeedSize])
	defer clear(derived)
	if !bytes.Equal(derived[ed25519.SeedSize:], k[ed25519.SeedSize:]) {
		return errors.New("solana: payer key is inconsistent: its public half does not belong to its secret half")
	}
	return nil
}

const redacted = "[redacted]"

// Format prints the configuration with the payer key replaced by its public
// key, whatever the verb (%v, %+v, %#v, %s), so a logged Config never shows
// the secret.
func (c Config) Format(f fmt.State, verb rune) {
	fmt.Fprintf(f, "solana.Config{RPCURL:%q Payer:%s Cluster:%q Commitment:%q PriorityFee:%d MaxPriorityFee:%d RPCConnections:%d PollInterval:%s RebroadcastInterval:%s RPCTimeout:%s}",
		redact.Endpoint(c.RPCURL), describeKey(c.Payer), c.Cluster, c.Commitment, c.PriorityFee, c.MaxPriorityFee, c.RPCConnections, c.PollInterval, c.RebroadcastInterval, c.RPCTimeout)
}

// LogValue keeps the payer key out of slog output.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("rpc_url", redact.Endpoint(c.RPCURL)),
		slog.String("payer", describeKey(c.Payer)),
		slog.String("commitment", c.Commitment),
		slog.Uint64("priority_fee", c.PriorityFee),
		slog.Uint64("max_priority_fee", c.MaxPriorityFee),
		slog.String("cluster", c.Cluster),
	)
}

// MarshalJSON keeps the payer key out of JSON dumps of the configuration.
func (c Config) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]any{
		"rpc_url":              redact.Endpoint(c.RPCURL),
		"payer":                describeKey(c.Payer),
		"commitment":           c.Commitment,
		"priority_fee":         c.PriorityFee,
		"max_priority_fee":     c.MaxPriorityFee,
		"cluster":              c.Cluster,
		"rpc_connections":      c.RPCConnections,
		"poll_interval":        c.PollInterval.String(),
		"rebroadcast_interval": c.RebroadcastInterval.String(),
		"rpc_timeout":          c.RPCTimeout.String(),
	})
}

// describeKey names a key by its public half only.
func describeKey(k sol.PrivateKey) string {
	if checkKey(k) != nil {
		if len(k) == 0 {
			return "none"
		}
		return redacted
	}
	return redacted + "(pubkey " + k.PublicKey().String() + ")"
}

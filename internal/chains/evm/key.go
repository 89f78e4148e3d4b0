package evm

import (
	"crypto/ecdsa"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/ethereum/go-ethereum/crypto"

	"github.com/keeperhq/keeper/internal/redact"
)

// LoadKey reads a secp256k1 private key from a file holding it as 64 hex
// characters (an optional 0x prefix and surrounding whitespace are allowed).
// Errors name the file but never echo its content.
func LoadKey(path string) (*ecdsa.PrivateKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("etherlink: key file %s: %w", path, pe.Err)
		}
		return nil, fmt.Errorf("etherlink: key file %s: cannot read it", path)
	}
	defer clear(b)
	s := strings.TrimSpace(string(b))
	s = strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X")
	bad := fmt.Errorf("etherlink: key file %s does not hold a private key: want 64 hex characters (32 bytes)", path)
	if len(s) != 64 {
		return nil, bad
	}
	raw, err := hex.DecodeString(s)
	if err != nil {
		return nil, bad
	}
	defer clear(raw)
	k, err := crypto.ToECDSA(raw)
	if err != nil {
		return nil, fmt.Errorf("etherlink: key file %s does not hold a valid secp256k1 private key", path)
	}
	return k, nil
}

// scrubber removes secrets from text that may reach an error or a log line:
// the private key in hex (either case, with or without 0x) and the RPC URL
// (which often carries an API key), replaced by its scheme and host.
type scrubber struct {
	secrets []string
	repl    []string
}

func newScrubber(key *ecdsa.PrivateKey, rpcURL string) *scrubber {
	s := &scrubber{}
	if key != nil {
		h := hex.EncodeToString(crypto.FromECDSA(key))
		s.add(h, "[private key redacted]")
		s.add(strings.ToUpper(h), "[private key redacted]")
	}
	if rpcURL != "" {
		s.add(rpcURL, redact.Endpoint(rpcURL))
	}
	return s
}

func (s *scrubber) add(secret, repl string) {
	if secret == "" || secret == repl {
		return
	}
	s.secrets = append(s.secrets, secret)
	s.repl = append(s.repl, repl)
}

func (s *scrubber) text(t string) string {
	for i, sec := range s.secrets {
		t = strings.ReplaceAll(t, sec, s.repl[i])
	}
	return t
}

// scrubbedError carries a cleaned message while keeping the chain for errors.Is/As.
type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }

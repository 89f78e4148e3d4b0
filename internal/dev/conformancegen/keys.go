package main

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/ethereum/go-ethereum/crypto"
	sol "github.com/gagliardetto/solana-go"
	"golang.org/x/mod/sumdb/note"

	"github.com/keeperhq/keeper/evlog"
)

// Every key of the corpus is derived from a fixed label, so that the
// generator makes the same bytes every run.

func seed(label string) []byte {
	s := sha256.Sum256([]byte(label))
	return s[:]
}

// noteSigner is an evlog.Signer for origin whose Ed25519 seed is
// SHA-256(label), and its verifier key: note.GenerateKey draws its key from
// a random source, so the signer key is written out here as it writes it.
func noteSigner(label, origin string) (*evlog.Signer, string, error) {
	sd := seed(label)
	pub := ed25519.NewKeyFromSeed(sd).Public().(ed25519.PublicKey)
	vkey, err := note.NewEd25519VerifierKey(origin, pub)
	if err != nil {
		return nil, "", fmt.Errorf("verifier key %q: %w", label, err)
	}
	parts := strings.Split(vkey, "+") // origin, key hash, key
	skey := fmt.Sprintf("PRIVATE+KEY+%s+%s+%s", origin, parts[1], base64.StdEncoding.EncodeToString(append([]byte{1}, sd...)))
	s, err := evlog.NewSigner(skey, origin)
	if err != nil {
		return nil, "", fmt.Errorf("signer %q: %w", label, err)
	}
	return s, vkey, nil
}

// evmKey is the secp256k1 key SHA-256(label).
func evmKey(label string) (*ecdsa.PrivateKey, error) {
	k, err := crypto.ToECDSA(seed(label))
	if err != nil {
		return nil, fmt.Errorf("EVM key %q: %w", label, err)
	}
	return k, nil
}

// solanaKey is the Ed25519 key whose seed is SHA-256(label).
func solanaKey(label string) sol.PrivateKey {
	return sol.PrivateKey(ed25519.NewKeyFromSeed(seed(label)))
}

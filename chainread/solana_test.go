//go:build !js

package chainread_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	sol "github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/programs/system"
	solrpc "github.com/gagliardetto/solana-go/rpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/chainread"
	"github.com/keeperhq/keeper/internal/dev/devnet"
)

func TestSolanaMemoProgramIsSolanaGos(t *testing.T) {
	assert.Equal(t, sol.MemoProgramID.String(), chainread.SolanaMemoProgram)
	assert.Equal(t, [32]byte(sol.MemoProgramID), chainread.SolanaMemoProgramID)
}

func TestDecodeSolanaTransactionReadsALegacyTransactionSolanaGoSigned(t *testing.T) {
	payer, cosigner := newSolKey(t), newSolKey(t)
	to := newSolKey(t).PublicKey()
	tx := solSigned(t, nil, []sol.PrivateKey{payer, cosigner},
		solMemo([]byte("keeper:first")),
		system.NewTransferInstruction(1, payer.PublicKey(), to).Build(),
		sol.NewInstruction(sol.MemoProgramID, sol.AccountMetaSlice{sol.Meta(cosigner.PublicKey()).SIGNER()}, []byte("second")))
	wire, err := tx.MarshalBinary()
	require.NoError(t, err)

	got, err := chainread.DecodeSolanaTransaction(wire)
	require.NoError(t, err)
	assertSameAsSolanaGo(t, tx, got)
	assert.Equal(t, -1, got.Version)
	assert.Empty(t, got.AddressTableLookups)
	assert.Equal(t, payer.PublicKey().String(), got.FeePayer())
	assert.Equal(t, [][]byte{[]byte("keeper:first"), []byte("second")}, got.Memos())
}

func TestDecodeSolanaTransactionReadsAV0TransactionWithAddressTableLookups(t *testing.T) {
	payer := newSolKey(t)
	table, loadedW, loadedR := newSolKey(t).PublicKey(), newSolKey(t).PublicKey(), newSolKey(t).PublicKey()
	tx := solSigned(t, map[sol.PublicKey]sol.PublicKeySlice{table: {loadedW, loadedR}}, []sol.PrivateKey{payer},
		system.NewTransferInstruction(1, payer.PublicKey(), loadedW).Build(),
		sol.NewInstruction(sol.MemoProgramID, sol.AccountMetaSlice{sol.Meta(loadedR)}, []byte("v0 memo")))
	wire, err := tx.MarshalBinary()
	require.NoError(t, err)
	require.Equal(t, byte(0x80), wire[1+64], "solana-go built a v0 message")

	got, err := chainread.DecodeSolanaTransaction(wire)
	require.NoError(t, err)
	assertSameAsSolanaGo(t, tx, got)
	assert.Equal(t, 0, got.Version)
	require.Len(t, got.AddressTableLookups, 1)
	l := tx.Message.AddressTableLookups[0]
	assert.Equal(t, [32]byte(l.AccountKey), got.AddressTableLookups[0].AccountKey)
	assert.Equal(t, []uint8(l.WritableIndexes), got.AddressTableLookups[0].WritableIndexes)
	assert.Equal(t, []uint8(l.ReadonlyIndexes), got.AddressTableLookups[0].ReadonlyIndexes)
	assert.Equal(t, [][]byte{[]byte("v0 memo")}, got.Memos())
}

func TestMemosAreTheExactBytesEvenALeadingByteOrderMark(t *testing.T) {
	payer := newSolKey(t)
	memo := []byte("\ufeffkeeper:v3:x \x00\xff")
	require.Equal(t, []byte{0xEF, 0xBB, 0xBF}, memo[:3])
	tx := solSigned(t, nil, []sol.PrivateKey{payer}, solMemo(memo), solMemo(nil))
	wire, err := tx.MarshalBinary()
	require.NoError(t, err)
	got, err := chainread.DecodeSolanaTransaction(wire)
	require.NoError(t, err)
	require.Len(t, got.Memos(), 2)
	assert.Equal(t, memo, got.Memos()[0])
	assert.Empty(t, got.Memos()[1])
}

func TestAProgramLoadedFromALookupTableIsNotTheMemoProgram(t *testing.T) {
	payer := newEd25519(t)
	h := handTx{version: 0, header: [3]byte{1, 0, 1},
		keys: [][32]byte{[32]byte(payer.Public().(ed25519.PublicKey)), chainread.SolanaMemoProgramID},
		ixs: []chainread.SolanaInstruction{
			{ProgramIDIndex: 2, Data: []byte("looked-up program")},
			{ProgramIDIndex: 1, Data: []byte("static memo")},
		},
		lookups: []chainread.SolanaAddressTableLookup{{AccountKey: [32]byte{9}, ReadonlyIndexes: []uint8{0}}},
	}
	got, err := chainread.DecodeSolanaTransaction(h.signed(payer))
	require.NoError(t, err)
	assert.Equal(t, [][]byte{[]byte("static memo")}, got.Memos())
}

func TestDecodeSolanaTransactionRefusesWhatSolanaWouldNot(t *testing.T) {
	payer, other := newEd25519(t), newEd25519(t)
	good := handTx{version: -1, header: [3]byte{1, 0, 1},
		keys: [][32]byte{[32]byte(payer.Public().(ed25519.PublicKey)), chainread.SolanaMemoProgramID},
		ixs:  []chainread.SolanaInstruction{{ProgramIDIndex: 1, Data: []byte("memo")}},
	}
	wire := good.signed(payer)
	_, err := chainread.DecodeSolanaTransaction(wire)
	require.NoError(t, err)

	flipped := func(i int) []byte { b := bytes.Clone(wire); b[i] ^= 1; return b }
	edit := func(f func(*handTx)) handTx { h := good; h.ixs = slices.Clone(good.ixs); f(&h); return h }
	msg := good.message()
	twoSigners := edit(func(h *handTx) {
		h.header[0] = 2
		h.keys = [][32]byte{h.keys[0], [32]byte(other.Public().(ed25519.PublicKey)), chainread.SolanaMemoProgramID}
		h.ixs[0].ProgramIDIndex = 2
	})
	// Each case is refused for its own reason, named by the second string.
	lookupLoadsNothing := edit(func(h *handTx) {
		h.version = 0
		h.lookups = []chainread.SolanaAddressTableLookup{{AccountKey: [32]byte{9}}}
	})
	for _, c := range []struct {
		name string
		wire []byte
		why  string
	}{
		{"a flipped signature byte", flipped(1 + 10), "signature 0"},
		{"a flipped message byte", flipped(len(wire) - 1), "signature 0"},
		{"signatures swapped", wireOf(sign(twoSigners.message(), other, payer), twoSigners.message()), "signature 0"},
		{"a trailing byte", append(bytes.Clone(wire), 0), "1 trailing bytes"},
		{"no signature", wireOf(nil, msg), "0 signatures, and the message requires 1"},
		{"a signature too many", wireOf(append(sign(msg, payer), sign(msg, other)...), msg), "2 signatures, and the message requires 1"},
		{"a signature too few", wireOf(sign(twoSigners.message(), payer), twoSigners.message()), "1 signatures, and the message requires 2"},
		{"a fee payer that does not sign", wireOf(nil, edit(func(h *handTx) { h.header = [3]byte{0, 0, 1} }).message()), "the fee payer does not sign"},
		{"a read-only fee payer", edit(func(h *handTx) { h.header = [3]byte{1, 1, 1} }).signed(payer), "no writable signer"},
		{"a header counting more keys", edit(func(h *handTx) { h.header = [3]byte{1, 0, 2} }).signed(payer), "the header counts more accounts"},
		{"the fee payer as program", edit(func(h *handTx) { h.ixs[0].ProgramIDIndex = 0 }).signed(payer), "program index 0"},
		{"a program index out of range", edit(func(h *handTx) { h.ixs[0].ProgramIDIndex = 2 }).signed(payer), "program index 2"},
		{"an account index out of range", edit(func(h *handTx) { h.ixs[0].Accounts = []uint8{2} }).signed(payer), "account index 2"},
		{"message version 1", edit(func(h *handTx) { h.version = 1 }).signed(payer), "version 1"},
		{"a lookup that loads nothing", lookupLoadsNothing.signed(payer), "loads no key"},
		{"a count not in its shortest form", append([]byte{0x81, 0x00}, wire[1:]...), "shortest form"},
		{"a count that overflows", append([]byte{0xff, 0xff, 0x04}, wire[1:]...), "overflows"},
		{"nothing", nil, "truncated"},
	} {
		_, err := chainread.DecodeSolanaTransaction(c.wire)
		assert.ErrorIs(t, err, chainread.ErrMalformed, c.name)
		assert.ErrorContains(t, err, c.why, c.name)
	}
	for n := range len(wire) {
		_, err := chainread.DecodeSolanaTransaction(wire[:n])
		assert.ErrorIs(t, err, chainread.ErrMalformed, "truncated to %d bytes", n)
	}
}

func TestSolanaReadsAFinalizedMemoTransactionFromTheDevnet(t *testing.T) {
	ctx := t.Context()
	d, err := devnet.Start(ctx, devnet.Options{SlotTime: time.Hour})
	require.NoError(t, err)
	t.Cleanup(d.Stop)
	d.Pause()
	client := solrpc.New(d.URL())
	c := chainread.HTTP(d.URL(), nil)

	payer := d.Payer()
	bh, err := client.GetLatestBlockhash(ctx, solrpc.CommitmentFinalized)
	require.NoError(t, err)
	memo := []byte("\ufeffkeeper:devnet memo")
	tx := solSignedOn(t, bh.Value.Blockhash, nil, []sol.PrivateKey{payer}, solMemo(memo))
	sig, err := client.SendTransaction(ctx, tx)
	require.NoError(t, err)

	d.Advance(2) // included and confirmed, not finalized
	got, err := chainread.Solana(ctx, c, sig)
	require.NoError(t, err)
	assert.False(t, got.Found)
	assert.False(t, got.Final)
	assert.Equal(t, "transaction not found at finalized (unknown, or not final yet)", got.Detail)
	st, err := client.GetSignatureStatuses(ctx, true, sig)
	require.NoError(t, err)
	require.NotNil(t, st.Value[0])
	_, err = c.Call(ctx, "getBlock", st.Value[0].Slot, map[string]any{"commitment": "finalized", "transactionDetails": "signatures"})
	var rpcErr *chainread.RPCError
	require.ErrorAs(t, err, &rpcErr, "its block is not available at finalized either")
	assert.Equal(t, -32004, rpcErr.Code)
	genesis, err := client.GetGenesisHash(ctx)
	require.NoError(t, err)
	assert.Equal(t, "solana:"+genesis.String()[:32], got.Network)

	d.Advance(40)
	got, err = chainread.Solana(ctx, c, sig)
	require.NoError(t, err)
	assert.True(t, got.Found)
	assert.True(t, got.Succeeded)
	assert.True(t, got.Final)
	assert.Equal(t, payer.PublicKey().String(), got.Sender)
	assert.Equal(t, [][]byte{memo}, got.Payloads)
	assert.Empty(t, got.Detail)

	assert.Equal(t, st.Value[0].Slot, got.Block)
	noRewards := false
	block, err := client.GetBlockWithOpts(ctx, got.Block, &solrpc.GetBlockOpts{
		TransactionDetails: solrpc.TransactionDetailsNone, Rewards: &noRewards, Commitment: solrpc.CommitmentFinalized})
	require.NoError(t, err)
	assert.Equal(t, block.Blockhash.String(), got.BlockHash)
	require.NotNil(t, block.BlockTime)
	assert.Equal(t, block.BlockTime.Time().UTC(), got.BlockTime)
	assert.Equal(t, time.UTC, got.BlockTime.Location())

	history, err := chainread.SolanaHistory(ctx, c, payer.PublicKey().String(), "")
	require.NoError(t, err)
	require.NotEmpty(t, history)
	assert.Equal(t, chainread.SolanaSignatureInfo{Signature: sig.String(), Slot: got.Block, BlockTime: history[0].BlockTime}, history[0])
}

func TestSolanaJudgesWhatTheNodeAnswers(t *testing.T) {
	payer := newSolKey(t)
	tx := solSigned(t, nil, []sol.PrivateKey{payer}, solMemo([]byte("m")))
	wire, err := tx.MarshalBinary()
	require.NoError(t, err)
	sig := tx.Signatures[0]
	other := solSigned(t, nil, []sol.PrivateKey{payer}, solMemo([]byte("other")))
	otherWire, err := other.MarshalBinary()
	require.NoError(t, err)
	blockhash := sol.Hash{7}.String()
	genesis := sol.Hash{1, 2, 3}.String()

	txAnswer := func(wire []byte, meta any) map[string]any {
		return map[string]any{"slot": 42, "blockTime": 1, "version": "legacy", "meta": meta,
			"transaction": []string{base64.StdEncoding.EncodeToString(wire), "base64"}}
	}
	blockAnswer := func(sigs ...string) map[string]any {
		return map[string]any{"blockhash": blockhash, "blockTime": 1700000000, "signatures": sigs, "blockHeight": 40}
	}
	ok := map[string]any{"err": nil, "fee": 5000}

	t.Run("asks at finalized", func(t *testing.T) {
		calls := map[string]string{}
		f := fakeSolana(map[string]any{"getTransaction": txAnswer(wire, ok), "getBlock": blockAnswer(sig.String())}, genesis)
		got, err := chainread.Solana(t.Context(), recording(f, calls), sig)
		require.NoError(t, err)
		assert.Equal(t, fmt.Sprintf(`[%q,{"commitment":"finalized","encoding":"base64","maxSupportedTransactionVersion":0}]`, sig), calls["getTransaction"])
		assert.Equal(t, `[42,{"commitment":"finalized","maxSupportedTransactionVersion":0,"rewards":false,"transactionDetails":"signatures"}]`, calls["getBlock"])
		assert.Equal(t, chainread.Tx{Network: "solana:" + genesis[:32], Found: true, Succeeded: true, Final: true,
			Sender: payer.PublicKey().String(), Payloads: [][]byte{[]byte("m")}, Block: 42, BlockHash: blockhash,
			BlockTime: time.Unix(1700000000, 0).UTC()}, got)
	})
	t.Run("a failed transaction", func(t *testing.T) {
		f := fakeSolana(map[string]any{"getTransaction": txAnswer(wire, map[string]any{"err": map[string]any{"InstructionError": []any{0, "Custom"}}}),
			"getBlock": blockAnswer(sig.String())}, genesis)
		got, err := chainread.Solana(t.Context(), f, sig)
		require.NoError(t, err)
		assert.True(t, got.Found)
		assert.False(t, got.Succeeded)
		assert.True(t, got.Final)
		assert.Equal(t, `transaction failed: {"InstructionError":[0,"Custom"]}`, got.Detail)
	})
	t.Run("no meta", func(t *testing.T) {
		f := fakeSolana(map[string]any{"getTransaction": txAnswer(wire, nil), "getBlock": blockAnswer(sig.String())}, genesis)
		got, err := chainread.Solana(t.Context(), f, sig)
		require.NoError(t, err)
		assert.False(t, got.Succeeded)
		assert.Equal(t, "the node returned no transaction meta", got.Detail)
	})
	t.Run("another transaction", func(t *testing.T) {
		f := fakeSolana(map[string]any{"getTransaction": txAnswer(otherWire, ok), "getBlock": blockAnswer(sig.String())}, genesis)
		_, err := chainread.Solana(t.Context(), f, sig)
		assert.ErrorIs(t, err, chainread.ErrMalformed)
		assert.ErrorContains(t, err, "the node returned another transaction")
	})
	t.Run("a forged signature", func(t *testing.T) {
		bad := bytes.Clone(wire)
		bad[len(bad)-1] ^= 1
		f := fakeSolana(map[string]any{"getTransaction": txAnswer(bad, ok), "getBlock": blockAnswer(sig.String())}, genesis)
		_, err := chainread.Solana(t.Context(), f, sig)
		assert.ErrorIs(t, err, chainread.ErrMalformed)
	})
	t.Run("a slot that does not hold it", func(t *testing.T) {
		f := fakeSolana(map[string]any{"getTransaction": txAnswer(wire, ok), "getBlock": blockAnswer(other.Signatures[0].String())}, genesis)
		got, err := chainread.Solana(t.Context(), f, sig)
		assert.ErrorIs(t, err, chainread.ErrSlotMismatch)
		assert.True(t, got.Found)
		assert.False(t, got.Final)
		assert.Equal(t, "slot 42 does not hold the transaction", got.Detail)
	})
	t.Run("a block the node cannot serve", func(t *testing.T) {
		f := fakeSolana(map[string]any{"getTransaction": txAnswer(wire, ok),
			"getBlock": &chainread.RPCError{Code: -32004, Message: "Block not available for slot 42"}}, genesis)
		got, err := chainread.Solana(t.Context(), f, sig)
		assert.EqualError(t, err, "solana: getBlock 42: JSON-RPC error -32004: Block not available for slot 42")
		assert.False(t, got.Final)
	})
	t.Run("a genesis hash that is not one", func(t *testing.T) {
		f := fakeSolana(map[string]any{}, "not-base58!")
		_, err := chainread.Solana(t.Context(), f, sig)
		assert.ErrorIs(t, err, chainread.ErrMalformed)
	})
}

func TestSolanaHistoryPagesBackToTheFirstTransaction(t *testing.T) {
	account := newSolKey(t).PublicKey().String()
	all := make([]map[string]any, 1003)
	for i := range all {
		var s [64]byte
		_, _ = rand.Read(s[:])
		var err any
		if i == 5 {
			err = map[string]any{"InstructionError": []any{0, "Custom"}}
		}
		all[i] = map[string]any{"signature": chainread.Base58Encode(s[:]), "slot": 5000 - i, "err": err, "memo": nil, "blockTime": 1700000000 - i}
	}
	var befores []string
	page := func(failSecond bool) chainread.CallerFunc {
		return func(_ context.Context, method string, params ...any) (json.RawMessage, error) {
			require.Equal(t, "getSignaturesForAddress", method)
			require.Equal(t, account, params[0])
			cfg := params[1].(map[string]any)
			assert.Equal(t, 1000, cfg["limit"])
			assert.Equal(t, "finalized", cfg["commitment"])
			before, _ := cfg["before"].(string)
			befores = append(befores, before)
			if before == "" {
				return json.Marshal(all[:1000])
			}
			if failSecond {
				return nil, &chainread.RPCError{Code: -32603, Message: "internal error"}
			}
			return json.Marshal(all[1000:])
		}
	}

	got, err := chainread.SolanaHistory(t.Context(), page(false), account, "")
	require.NoError(t, err)
	assert.Equal(t, []string{"", all[999]["signature"].(string)}, befores)
	require.Len(t, got, 1003)
	for i, s := range got {
		assert.Equal(t, all[i]["signature"], s.Signature)
		assert.Equal(t, uint64(5000-i), s.Slot)
		assert.Equal(t, i == 5, s.Failed)
		require.NotNil(t, s.BlockTime)
		assert.Equal(t, int64(1700000000-i), *s.BlockTime)
	}

	befores = nil
	got, err = chainread.SolanaHistory(t.Context(), page(false), account, all[1001]["signature"].(string))
	require.NoError(t, err)
	assert.Len(t, got, 1001, "until is left out")

	befores = nil
	got, err = chainread.SolanaHistory(t.Context(), page(false), account, all[3]["signature"].(string))
	require.NoError(t, err)
	assert.Len(t, got, 3)
	assert.Len(t, befores, 1, "reading stops at until")

	got, err = chainread.SolanaHistory(t.Context(), page(true), account, "")
	assert.EqualError(t, err, fmt.Sprintf("solana: getSignaturesForAddress %s before %s: JSON-RPC error -32603: internal error", account, all[999]["signature"]))
	assert.Nil(t, got)
}

func TestSolanaHistoryRefusesAPageThatRepeatsOrGoesForward(t *testing.T) {
	account := newSolKey(t).PublicKey().String()
	s1, s2 := chainread.Base58Encode(bytes.Repeat([]byte{1}, 64)), chainread.Base58Encode(bytes.Repeat([]byte{2}, 64))
	for name, page := range map[string]string{
		"repeated":        fmt.Sprintf(`[{"signature":%q,"slot":5,"err":null},{"signature":%q,"slot":5,"err":null}]`, s1, s1),
		"forward":         fmt.Sprintf(`[{"signature":%q,"slot":5,"err":null},{"signature":%q,"slot":6,"err":null}]`, s1, s2),
		"no slot":         fmt.Sprintf(`[{"signature":%q,"err":null}]`, s1),
		"not a signature": `[{"signature":"abc","slot":5,"err":null}]`,
		"null":            `null`,
	} {
		f := chainread.CallerFunc(func(context.Context, string, ...any) (json.RawMessage, error) { return json.RawMessage(page), nil })
		_, err := chainread.SolanaHistory(t.Context(), f, account, "")
		assert.ErrorIs(t, err, chainread.ErrMalformed, name)
	}
}

// fakeSolana answers getGenesisHash with genesis and each other method
// with its entry in answers (an error is returned as is).
func fakeSolana(answers map[string]any, genesis string) chainread.CallerFunc {
	return func(_ context.Context, method string, _ ...any) (json.RawMessage, error) {
		if method == "getGenesisHash" {
			return json.Marshal(genesis)
		}
		a, ok := answers[method]
		if !ok {
			return nil, fmt.Errorf("unexpected %s", method)
		}
		if err, ok := a.(error); ok {
			return nil, err
		}
		return json.Marshal(a)
	}
}

// recording records each method's params, as JSON, into calls.
func recording(c chainread.Caller, calls map[string]string) chainread.CallerFunc {
	return func(ctx context.Context, method string, params ...any) (json.RawMessage, error) {
		b, err := json.Marshal(params)
		if err != nil {
			return nil, err
		}
		calls[method] = string(b)
		return c.Call(ctx, method, params...)
	}
}

func newSolKey(t *testing.T) sol.PrivateKey {
	t.Helper()
	k, err := sol.NewRandomPrivateKey()
	require.NoError(t, err)
	return k
}

func newEd25519(t *testing.T) ed25519.PrivateKey {
	t.Helper()
	_, k, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	return k
}

// solMemo is an SPL Memo instruction whose data is memo, exactly.
func solMemo(memo []byte) sol.Instruction { return sol.NewInstruction(sol.MemoProgramID, nil, memo) }

// solSigned is a transaction paid by signers[0] and signed by all of them
// (v0 when tables are given).
func solSigned(t *testing.T, tables map[sol.PublicKey]sol.PublicKeySlice, signers []sol.PrivateKey, ixs ...sol.Instruction) *sol.Transaction {
	t.Helper()
	return solSignedOn(t, sol.Hash{42}, tables, signers, ixs...)
}

func solSignedOn(t *testing.T, blockhash sol.Hash, tables map[sol.PublicKey]sol.PublicKeySlice, signers []sol.PrivateKey, ixs ...sol.Instruction) *sol.Transaction {
	t.Helper()
	opts := []sol.TransactionOption{sol.TransactionPayer(signers[0].PublicKey())}
	if tables != nil {
		opts = append(opts, sol.TransactionAddressTables(tables))
	}
	tx, err := sol.NewTransaction(ixs, blockhash, opts...)
	require.NoError(t, err)
	_, err = tx.Sign(func(k sol.PublicKey) *sol.PrivateKey {
		for i := range signers {
			if signers[i].PublicKey() == k {
				return &signers[i]
			}
		}
		return nil
	})
	require.NoError(t, err)
	return tx
}

func assertSameAsSolanaGo(t *testing.T, tx *sol.Transaction, got chainread.SolanaTransaction) {
	t.Helper()
	require.Len(t, got.Signatures, len(tx.Signatures))
	for i, s := range tx.Signatures {
		assert.Equal(t, [64]byte(s), got.Signatures[i])
	}
	h := tx.Message.Header
	assert.Equal(t, [3]uint8{h.NumRequiredSignatures, h.NumReadonlySignedAccounts, h.NumReadonlyUnsignedAccounts},
		[3]uint8{got.NumRequiredSignatures, got.NumReadonlySigned, got.NumReadonlyUnsigned})
	require.Len(t, got.AccountKeys, len(tx.Message.AccountKeys))
	for i, k := range tx.Message.AccountKeys {
		assert.Equal(t, [32]byte(k), got.AccountKeys[i])
	}
	assert.Equal(t, [32]byte(tx.Message.RecentBlockhash), got.RecentBlockhash)
	require.Len(t, got.Instructions, len(tx.Message.Instructions))
	for i, ix := range tx.Message.Instructions {
		assert.Equal(t, uint8(ix.ProgramIDIndex), got.Instructions[i].ProgramIDIndex)
		require.Len(t, got.Instructions[i].Accounts, len(ix.Accounts))
		for j, a := range ix.Accounts {
			assert.Equal(t, uint8(a), got.Instructions[i].Accounts[j])
		}
		assert.Equal(t, []byte(ix.Data), got.Instructions[i].Data)
	}
	msg, err := tx.Message.MarshalBinary()
	require.NoError(t, err)
	assert.Equal(t, msg, got.Message)
}

// handTx is a transaction message spelled by hand, for what solana-go
// would not build.
type handTx struct {
	version int // -1 legacy
	header  [3]byte
	keys    [][32]byte
	ixs     []chainread.SolanaInstruction
	lookups []chainread.SolanaAddressTableLookup
}

func (h handTx) message() []byte {
	var b []byte
	if h.version >= 0 {
		b = append(b, 0x80|byte(h.version))
	}
	b = append(b, h.header[:]...)
	b = append(b, compactU16(len(h.keys))...)
	for _, k := range h.keys {
		b = append(b, k[:]...)
	}
	b = append(b, make([]byte, 32)...) // recent blockhash
	b = append(b, compactU16(len(h.ixs))...)
	for _, ix := range h.ixs {
		b = append(b, ix.ProgramIDIndex)
		b = append(append(b, compactU16(len(ix.Accounts))...), ix.Accounts...)
		b = append(append(b, compactU16(len(ix.Data))...), ix.Data...)
	}
	if h.version >= 0 {
		b = append(b, compactU16(len(h.lookups))...)
		for _, l := range h.lookups {
			b = append(b, l.AccountKey[:]...)
			b = append(append(b, compactU16(len(l.WritableIndexes))...), l.WritableIndexes...)
			b = append(append(b, compactU16(len(l.ReadonlyIndexes))...), l.ReadonlyIndexes...)
		}
	}
	return b
}

func (h handTx) signed(keys ...ed25519.PrivateKey) []byte {
	msg := h.message()
	return wireOf(sign(msg, keys...), msg)
}

func sign(msg []byte, keys ...ed25519.PrivateKey) [][64]byte {
	var out [][64]byte
	for _, k := range keys {
		out = append(out, [64]byte(ed25519.Sign(k, msg)))
	}
	return out
}

func wireOf(sigs [][64]byte, msg []byte) []byte {
	b := compactU16(len(sigs))
	for _, s := range sigs {
		b = append(b, s[:]...)
	}
	return append(b, msg...)
}

func compactU16(n int) []byte {
	var b []byte
	for {
		x := byte(n & 0x7f)
		n >>= 7
		if n == 0 {
			return append(b, x)
		}
		b = append(b, x|0x80)
	}
}

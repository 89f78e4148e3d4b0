package devnet

import (
	"encoding/base64"
	"encoding/binary"
	"strconv"
	"unicode/utf8"

	"github.com/gagliardetto/solana-go"
	"github.com/mr-tron/base58"
)

func u64s(v uint64) string { return strconv.FormatUint(v, 10) }

func keyStrings(keys []solana.PublicKey) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k.String()
	}
	return out
}

func sigStrings(sigs []solana.Signature) []string {
	out := make([]string, len(sigs))
	for i, s := range sigs {
		out[i] = s.String()
	}
	return out
}

// encodeTxWithMeta renders an included transaction as getTransaction and
// getBlock do: {transaction, meta[, version]}.
func encodeTxWithMeta(rec *txRecord, encoding string, maxVersion *uint64, details string) (map[string]any, *rpcError) {
	p := rec.p
	if p.v0 && maxVersion == nil {
		return nil, &rpcError{
			Code: codeUnsupportedTxVersion,
			Message: "Transaction version (0) is not supported by the requesting client. " +
				"Please try the request again with the following configuration parameter: \"maxSupportedTransactionVersion\": 0",
		}
	}
	out := map[string]any{}
	if maxVersion != nil {
		if p.v0 {
			out["version"] = 0
		} else {
			out["version"] = "legacy"
		}
	}
	if details == "accounts" {
		out["transaction"] = map[string]any{
			"signatures":  sigStrings(p.tx.Signatures),
			"accountKeys": parsedAccountKeys(p),
		}
		out["meta"] = map[string]any{
			"err":               errJSON(rec.res.err),
			"status":            statusJSON(rec.res.err),
			"fee":               rec.res.fee,
			"preBalances":       rec.res.pre,
			"postBalances":      rec.res.post,
			"preTokenBalances":  []any{},
			"postTokenBalances": []any{},
		}
		return out, nil
	}
	switch encoding {
	case "", "json":
		out["transaction"] = jsonTransaction(p)
	case "jsonParsed":
		out["transaction"] = parsedTransaction(p)
	case "base64":
		out["transaction"] = []string{base64.StdEncoding.EncodeToString(p.raw), "base64"}
	case "base58":
		out["transaction"] = []string{base58.Encode(p.raw), "base58"}
	case "binary":
		out["transaction"] = base58.Encode(p.raw)
	default:
		return nil, invalidParams("Invalid params: unsupported encoding `%s` (the devnet serves json, jsonParsed, base58, base64).", encoding)
	}
	var logs, inner any
	if rec.res.logs != nil {
		logs, inner = rec.res.logs, []any{}
	}
	meta := map[string]any{
		"err":                  errJSON(rec.res.err),
		"status":               statusJSON(rec.res.err),
		"fee":                  rec.res.fee,
		"preBalances":          rec.res.pre,
		"postBalances":         rec.res.post,
		"innerInstructions":    inner,
		"logMessages":          logs,
		"preTokenBalances":     []any{},
		"postTokenBalances":    []any{},
		"rewards":              []any{},
		"computeUnitsConsumed": rec.res.cu,
	}
	if encoding != "jsonParsed" {
		meta["loadedAddresses"] = map[string][]string{"writable": {}, "readonly": {}}
	}
	out["meta"] = meta
	return out, nil
}

func jsonTransaction(p *parsedTx) map[string]any {
	m := &p.tx.Message
	ixs := make([]map[string]any, len(m.Instructions))
	for i, ix := range m.Instructions {
		accounts := make([]int, len(ix.Accounts))
		for j, a := range ix.Accounts {
			accounts[j] = int(a)
		}
		ixs[i] = map[string]any{
			"programIdIndex": ix.ProgramIDIndex,
			"accounts":       accounts,
			"data":           base58.Encode(ix.Data),
			"stackHeight":    nil,
		}
	}
	msg := map[string]any{
		"header": map[string]uint8{
			"numRequiredSignatures":       m.Header.NumRequiredSignatures,
			"numReadonlySignedAccounts":   m.Header.NumReadonlySignedAccounts,
			"numReadonlyUnsignedAccounts": m.Header.NumReadonlyUnsignedAccounts,
		},
		"accountKeys":     keyStrings(p.keys),
		"recentBlockhash": m.RecentBlockhash.String(),
		"instructions":    ixs,
	}
	if p.v0 {
		msg["addressTableLookups"] = []any{}
	}
	return map[string]any{"signatures": sigStrings(p.tx.Signatures), "message": msg}
}

func parsedAccountKeys(p *parsedTx) []map[string]any {
	out := make([]map[string]any, len(p.keys))
	for i, k := range p.keys {
		out[i] = map[string]any{
			"pubkey":   k.String(),
			"writable": p.writable[i],
			"signer":   p.signer[i],
			"source":   "transaction",
		}
	}
	return out
}

// parsedTransaction is the jsonParsed form: memo and system transfers are
// parsed, other instructions are shown partially decoded.
func parsedTransaction(p *parsedTx) map[string]any {
	m := &p.tx.Message
	ixs := make([]map[string]any, len(m.Instructions))
	for i, ix := range m.Instructions {
		prog := p.keys[ix.ProgramIDIndex]
		d := []byte(ix.Data)
		switch {
		case (prog == solana.MemoProgramID || prog == memoV1ProgramID) && utf8.Valid(d):
			ixs[i] = map[string]any{"parsed": string(d), "program": "spl-memo", "programId": prog.String(), "stackHeight": nil}
			continue
		case prog == solana.SystemProgramID && len(d) >= 12 && binary.LittleEndian.Uint32(d) == 2 && len(ix.Accounts) >= 2:
			ixs[i] = map[string]any{
				"parsed": map[string]any{
					"info": map[string]any{
						"source":      p.keys[ix.Accounts[0]].String(),
						"destination": p.keys[ix.Accounts[1]].String(),
						"lamports":    binary.LittleEndian.Uint64(d[4:]),
					},
					"type": "transfer",
				},
				"program":     "system",
				"programId":   prog.String(),
				"stackHeight": nil,
			}
			continue
		}
		accounts := make([]string, len(ix.Accounts))
		for j, a := range ix.Accounts {
			accounts[j] = p.keys[a].String()
		}
		ixs[i] = map[string]any{"accounts": accounts, "data": base58.Encode(d), "programId": prog.String(), "stackHeight": nil}
	}
	msg := map[string]any{
		"accountKeys":     parsedAccountKeys(p),
		"recentBlockhash": m.RecentBlockhash.String(),
		"instructions":    ixs,
	}
	if p.v0 {
		msg["addressTableLookups"] = []any{}
	}
	return map[string]any{"signatures": sigStrings(p.tx.Signatures), "message": msg}
}

package devnet

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"math"
	"slices"

	bin "github.com/gagliardetto/binary"
	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/programs/system"
	"github.com/mr-tron/base58"
)

var methods map[string]handlerFunc

func init() {
	methods = map[string]handlerFunc{
		"getHealth":                         rpcGetHealth,
		"getVersion":                        rpcGetVersion,
		"getIdentity":                       rpcGetIdentity,
		"getGenesisHash":                    rpcGetGenesisHash,
		"getSlot":                           rpcGetSlot,
		"getBlockHeight":                    rpcGetBlockHeight,
		"getEpochInfo":                      rpcGetEpochInfo,
		"getTransactionCount":               rpcGetTransactionCount,
		"getFirstAvailableBlock":            rpcZero,
		"minimumLedgerSlot":                 rpcZero,
		"getLatestBlockhash":                rpcGetLatestBlockhash,
		"isBlockhashValid":                  rpcIsBlockhashValid,
		"getFeeForMessage":                  rpcGetFeeForMessage,
		"getRecentPrioritizationFees":       rpcGetRecentPrioritizationFees,
		"getMinimumBalanceForRentExemption": rpcGetMinimumBalanceForRentExemption,
		"getBalance":                        rpcGetBalance,
		"getAccountInfo":                    rpcGetAccountInfo,
		"getMultipleAccounts":               rpcGetMultipleAccounts,
		"requestAirdrop":                    rpcRequestAirdrop,
		"sendTransaction":                   rpcSendTransaction,
		"simulateTransaction":               rpcSimulateTransaction,
		"getSignatureStatuses":              rpcGetSignatureStatuses,
		"getTransaction":                    rpcGetTransaction,
		"getSignaturesForAddress":           rpcGetSignaturesForAddress,
		"getBlock":                          rpcGetBlock,
		"getBlockTime":                      rpcGetBlockTime,
	}
}

func rpcGetHealth(*Devnet, []json.RawMessage) (any, *rpcError) { return "ok", nil }

func rpcGetVersion(*Devnet, []json.RawMessage) (any, *rpcError) {
	return map[string]any{"solana-core": coreVersion, "feature-set": featureSet}, nil
}

func rpcGetIdentity(d *Devnet, _ []json.RawMessage) (any, *rpcError) {
	return map[string]string{"identity": d.faucet.PublicKey().String()}, nil
}

func rpcGetGenesisHash(d *Devnet, _ []json.RawMessage) (any, *rpcError) {
	return d.l.genesis().hash.String(), nil
}

func rpcZero(*Devnet, []json.RawMessage) (any, *rpcError) { return 0, nil }

// bankFromConfig decodes an optional commitment config at position i.
func (d *Devnet) bankFromConfig(params []json.RawMessage, i int) (*block, *rpcError) {
	var cc commitmentConfig
	if err := optional(params, i, &cc); err != nil {
		return nil, err
	}
	return d.bank(cc)
}

func rpcGetSlot(d *Devnet, params []json.RawMessage) (any, *rpcError) {
	b, err := d.bankFromConfig(params, 0)
	if err != nil {
		return nil, err
	}
	return b.slot, nil
}

func rpcGetBlockHeight(d *Devnet, params []json.RawMessage) (any, *rpcError) {
	b, err := d.bankFromConfig(params, 0)
	if err != nil {
		return nil, err
	}
	return b.height, nil
}

const slotsPerEpoch = 432_000

func rpcGetEpochInfo(d *Devnet, params []json.RawMessage) (any, *rpcError) {
	b, err := d.bankFromConfig(params, 0)
	if err != nil {
		return nil, err
	}
	return map[string]uint64{
		"absoluteSlot":     b.slot,
		"blockHeight":      b.height,
		"epoch":            b.slot / slotsPerEpoch,
		"slotIndex":        b.slot % slotsPerEpoch,
		"slotsInEpoch":     slotsPerEpoch,
		"transactionCount": b.txTotal,
	}, nil
}

func rpcGetTransactionCount(d *Devnet, params []json.RawMessage) (any, *rpcError) {
	b, err := d.bankFromConfig(params, 0)
	if err != nil {
		return nil, err
	}
	return b.txTotal, nil
}

func rpcGetLatestBlockhash(d *Devnet, params []json.RawMessage) (any, *rpcError) {
	b, err := d.bankFromConfig(params, 0)
	if err != nil {
		return nil, err
	}
	return wrap(b, map[string]any{
		"blockhash":            b.hash.String(),
		"lastValidBlockHeight": b.height + maxProcessingAge,
	}), nil
}

func rpcIsBlockhashValid(d *Devnet, params []json.RawMessage) (any, *rpcError) {
	var s string
	if err := required(params, 0, "blockhash", &s); err != nil {
		return nil, err
	}
	h, herr := solana.HashFromBase58(s)
	if herr != nil {
		return nil, invalidParams("Invalid param: Invalid")
	}
	b, err := d.bankFromConfig(params, 1)
	if err != nil {
		return nil, err
	}
	return wrap(b, d.l.hashValidIn(h, b.slot, b.height)), nil
}

func rpcGetFeeForMessage(d *Devnet, params []json.RawMessage) (any, *rpcError) {
	var s string
	if err := required(params, 0, "message", &s); err != nil {
		return nil, err
	}
	raw, derr := base64.StdEncoding.DecodeString(s)
	if derr != nil {
		return nil, invalidParams("invalid base64 encoding: %v", derr)
	}
	var m solana.Message
	if err := m.UnmarshalWithDecoder(bin.NewBinDecoder(raw)); err != nil {
		return nil, invalidParams("failed to deserialize solana_message::versions::VersionedMessage: %v", err)
	}
	b, err := d.bankFromConfig(params, 1)
	if err != nil {
		return nil, err
	}
	if m.Header.NumRequiredSignatures == 0 || slices.ContainsFunc(m.Instructions, func(ix solana.CompiledInstruction) bool {
		return int(ix.ProgramIDIndex) >= len(m.AccountKeys)
	}) {
		return nil, invalidParams("invalid transaction message: %s", newTxError("SanitizeFailure"))
	}
	if !d.l.hashValidIn(m.RecentBlockhash, b.slot, b.height) {
		return wrap(b, nil), nil
	}
	bud, berr := parseBudget(&m)
	if berr != nil {
		bud = budget{}
	}
	return wrap(b, bud.fee(int(m.Header.NumRequiredSignatures))), nil
}

func rpcGetRecentPrioritizationFees(d *Devnet, params []json.RawMessage) (any, *rpcError) {
	var keys []string
	if err := optional(params, 0, &keys); err != nil {
		return nil, err
	}
	if len(keys) > 128 {
		return nil, invalidParams("Too many inputs provided; max 128")
	}
	accounts := make([]solana.PublicKey, 0, len(keys))
	for _, k := range keys {
		pk, err := parsePubkey(k)
		if err != nil {
			return nil, err
		}
		accounts = append(accounts, pk)
	}
	type entry struct {
		Slot              uint64 `json:"slot"`
		PrioritizationFee uint64 `json:"prioritizationFee"`
	}
	out := []entry{}
	blocks := d.l.blocks
	for _, b := range blocks[max(1, len(blocks)-maxProcessingAge):] {
		var blockMin uint64
		accountMin := map[solana.PublicKey]uint64{}
		for i, rec := range b.txs {
			price := rec.res.budget.price
			if i == 0 || price < blockMin {
				blockMin = price
			}
			for j, k := range rec.p.keys {
				if rec.p.writable[j] {
					if cur, ok := accountMin[k]; !ok || price < cur {
						accountMin[k] = price
					}
				}
			}
		}
		fee := max(blockMin, b.congestionFee)
		for _, a := range accounts {
			fee = max(fee, accountMin[a])
		}
		out = append(out, entry{Slot: b.slot, PrioritizationFee: fee})
	}
	return out, nil
}

func rpcGetMinimumBalanceForRentExemption(d *Devnet, params []json.RawMessage) (any, *rpcError) {
	var size uint64
	if err := required(params, 0, "data length", &size); err != nil {
		return nil, err
	}
	if _, err := d.bankFromConfig(params, 1); err != nil {
		return nil, err
	}
	return (128 + size) * 3480 * 2, nil
}

func rpcGetBalance(d *Devnet, params []json.RawMessage) (any, *rpcError) {
	var s string
	if err := required(params, 0, "pubkey", &s); err != nil {
		return nil, err
	}
	pk, err := parsePubkey(s)
	if err != nil {
		return nil, err
	}
	b, err := d.bankFromConfig(params, 1)
	if err != nil {
		return nil, err
	}
	return wrap(b, d.l.balanceAt(pk, b.slot)), nil
}

type accountConfig struct {
	commitmentConfig
	Encoding  string `json:"encoding"`
	DataSlice *struct {
		Offset uint64 `json:"offset"`
		Length uint64 `json:"length"`
	} `json:"dataSlice"`
}

// accountJSON renders an account as of bank b, or nil when it does not exist.
func (d *Devnet) accountJSON(pk solana.PublicKey, lamports uint64, cfg accountConfig) (any, *rpcError) {
	owner, data, executable := solana.SystemProgramID, []byte{}, false
	if p, ok := builtinProgramState[pk]; ok {
		owner, data, executable = p.owner, p.data, true
	} else if lamports == 0 {
		return nil, nil
	}
	space := len(data)
	if s := cfg.DataSlice; s != nil {
		off := min(s.Offset, uint64(len(data)))
		end := min(off+s.Length, uint64(len(data)))
		data = data[off:end]
	}
	var enc any
	switch cfg.Encoding {
	case "", "binary":
		enc = base58.Encode(data)
	case "base58":
		if len(data) > 128 {
			return nil, invalidParams("Encoded binary (base 58) data should be less than 128 bytes, please use Base64 encoding.")
		}
		enc = []string{base58.Encode(data), "base58"}
	case "base64", "jsonParsed":
		// jsonParsed falls back to base64 for accounts no parser understands.
		enc = []string{base64.StdEncoding.EncodeToString(data), "base64"}
	default:
		return nil, invalidParams("Invalid params: unsupported encoding `%s` (the devnet serves binary, base58, base64, jsonParsed).", cfg.Encoding)
	}
	return map[string]any{
		"data":       enc,
		"executable": executable,
		"lamports":   lamports,
		"owner":      owner.String(),
		"rentEpoch":  uint64(math.MaxUint64),
		"space":      space,
	}, nil
}

func rpcGetAccountInfo(d *Devnet, params []json.RawMessage) (any, *rpcError) {
	var s string
	if err := required(params, 0, "pubkey", &s); err != nil {
		return nil, err
	}
	pk, err := parsePubkey(s)
	if err != nil {
		return nil, err
	}
	var cfg accountConfig
	if err := optional(params, 1, &cfg); err != nil {
		return nil, err
	}
	b, err := d.bank(cfg.commitmentConfig)
	if err != nil {
		return nil, err
	}
	acc, err := d.accountJSON(pk, d.l.balanceAt(pk, b.slot), cfg)
	if err != nil {
		return nil, err
	}
	return wrap(b, acc), nil
}

func rpcGetMultipleAccounts(d *Devnet, params []json.RawMessage) (any, *rpcError) {
	var keys []string
	if err := required(params, 0, "pubkeys", &keys); err != nil {
		return nil, err
	}
	if len(keys) > 100 {
		return nil, invalidParams("Too many inputs provided; max 100")
	}
	var cfg accountConfig
	if err := optional(params, 1, &cfg); err != nil {
		return nil, err
	}
	cfg.Encoding = cmp.Or(cfg.Encoding, "base64") // unlike getAccountInfo, whose default is the legacy "binary"
	b, err := d.bank(cfg.commitmentConfig)
	if err != nil {
		return nil, err
	}
	out := make([]any, 0, len(keys))
	for _, k := range keys {
		pk, err := parsePubkey(k)
		if err != nil {
			return nil, err
		}
		acc, err := d.accountJSON(pk, d.l.balanceAt(pk, b.slot), cfg)
		if err != nil {
			return nil, err
		}
		out = append(out, acc)
	}
	return wrap(b, out), nil
}

func rpcRequestAirdrop(d *Devnet, params []json.RawMessage) (any, *rpcError) {
	var (
		s        string
		lamports uint64
	)
	if err := required(params, 0, "pubkey", &s); err != nil {
		return nil, err
	}
	pk, err := parsePubkey(s)
	if err != nil {
		return nil, err
	}
	if err := required(params, 1, "lamports", &lamports); err != nil {
		return nil, err
	}
	b, err := d.bankFromConfig(params, 2)
	if err != nil {
		return nil, err
	}
	faucet := d.faucet.PublicKey()
	tx, terr := solana.NewTransaction(
		[]solana.Instruction{system.NewTransferInstruction(lamports, faucet, pk).Build()},
		b.hash, solana.TransactionPayer(faucet))
	if terr == nil {
		_, terr = tx.Sign(func(k solana.PublicKey) *solana.PrivateKey {
			if k == faucet {
				return &d.faucet
			}
			return nil
		})
	}
	var raw []byte
	if terr == nil {
		raw, terr = tx.MarshalBinary()
	}
	if terr != nil {
		return nil, &rpcError{Code: codeAirdropFailed, Message: "airdrop request failed. This can happen when the rate limit is reached."}
	}
	p, perr := parseTx(raw)
	if perr != nil {
		return nil, &rpcError{Code: codeAirdropFailed, Message: "airdrop request failed. This can happen when the rate limit is reached."}
	}
	d.enqueue(p, b.height+maxProcessingAge, nil, false)
	return p.sig.String(), nil
}

type sendConfig struct {
	SkipPreflight       bool    `json:"skipPreflight"`
	PreflightCommitment string  `json:"preflightCommitment"`
	Encoding            string  `json:"encoding"`
	MaxRetries          *uint64 `json:"maxRetries"`
	MinContextSlot      *uint64 `json:"minContextSlot"`
}

// simEnv is bank b as a simulation environment.
func (d *Devnet) simEnv(b *block) execEnv {
	l := d.l
	return execEnv{
		hashOK: func(h solana.Hash) bool { return l.hashValidIn(h, b.slot, b.height) },
		seen: func(s solana.Signature) bool {
			r, ok := l.txs[s]
			return ok && visible(r, b)
		},
		state: newView(func(pk solana.PublicKey) uint64 { return l.balanceAt(pk, b.slot) }),
	}
}

func logsOrEmpty(logs []string) []string {
	if logs == nil {
		return []string{}
	}
	return logs
}

func rpcSendTransaction(d *Devnet, params []json.RawMessage) (any, *rpcError) {
	var data string
	if err := required(params, 0, "transaction", &data); err != nil {
		return nil, err
	}
	var cfg sendConfig
	if err := optional(params, 1, &cfg); err != nil {
		return nil, err
	}
	raw, err := decodeWire(data, cfg.Encoding)
	if err != nil {
		return nil, err
	}
	p, err := parseTx(raw)
	if err != nil {
		return nil, err
	}
	c := processed
	if !cfg.SkipPreflight {
		if c, err = parseCommitment(cfg.PreflightCommitment); err != nil {
			return nil, err
		}
	}
	b, err := d.bankAt(c, cfg.MinContextSlot)
	if err != nil {
		return nil, err
	}
	var lastValid uint64
	if hb, ok := d.l.byHash[p.tx.Message.RecentBlockhash]; ok && hb.slot <= b.slot {
		lastValid = hb.height + maxProcessingAge
	} else if cfg.SkipPreflight {
		lastValid = b.height + maxProcessingAge
	}
	if !cfg.SkipPreflight {
		if !p.sigsOK {
			return nil, &rpcError{Code: codeSigVerificationFailure, Message: msgSigVerificationFailure}
		}
		if res := execute(p, d.simEnv(b)); res.err != nil {
			return nil, &rpcError{
				Code:    codeSendTxPreflightFailure,
				Message: "Transaction simulation failed: " + res.err.String(),
				Data: map[string]any{
					"err":                    res.err,
					"logs":                   logsOrEmpty(res.logs),
					"accounts":               nil,
					"unitsConsumed":          res.cu,
					"returnData":             nil,
					"innerInstructions":      nil,
					"replacementBlockhash":   nil,
					"loadedAccountsDataSize": 0,
				},
			}
		}
	}
	d.enqueue(p, lastValid, cfg.MaxRetries, true)
	return p.sig.String(), nil
}

type simulateConfig struct {
	commitmentConfig
	SigVerify              bool   `json:"sigVerify"`
	ReplaceRecentBlockhash bool   `json:"replaceRecentBlockhash"`
	Encoding               string `json:"encoding"`
	Accounts               *struct {
		Addresses []string `json:"addresses"`
		Encoding  string   `json:"encoding"`
	} `json:"accounts"`
	InnerInstructions bool `json:"innerInstructions"`
}

func rpcSimulateTransaction(d *Devnet, params []json.RawMessage) (any, *rpcError) {
	var data string
	if err := required(params, 0, "transaction", &data); err != nil {
		return nil, err
	}
	var cfg simulateConfig
	if err := optional(params, 1, &cfg); err != nil {
		return nil, err
	}
	if cfg.SigVerify && cfg.ReplaceRecentBlockhash {
		return nil, invalidParams("sigVerify may not be used with replaceRecentBlockhash")
	}
	raw, err := decodeWire(data, cfg.Encoding)
	if err != nil {
		return nil, err
	}
	p, err := parseTx(raw)
	if err != nil {
		return nil, err
	}
	b, err := d.bank(cfg.commitmentConfig)
	if err != nil {
		return nil, err
	}
	if cfg.SigVerify && !p.sigsOK {
		return nil, &rpcError{Code: codeSigVerificationFailure, Message: msgSigVerificationFailure}
	}
	env := d.simEnv(b)
	var replacement any
	if cfg.ReplaceRecentBlockhash {
		env.hashOK = func(solana.Hash) bool { return true }
		replacement = map[string]any{"blockhash": b.hash.String(), "lastValidBlockHeight": b.height + maxProcessingAge}
	}
	res := execute(p, env)
	var accounts any
	if cfg.Accounts != nil {
		if len(cfg.Accounts.Addresses) > len(p.keys) {
			return nil, invalidParams("Too many accounts provided; max %d", len(p.keys))
		}
		list := make([]any, 0, len(cfg.Accounts.Addresses))
		for _, a := range cfg.Accounts.Addresses {
			pk, err := parsePubkey(a)
			if err != nil {
				return nil, err
			}
			lamports := d.l.balanceAt(pk, b.slot)
			if v, ok := res.writes[pk]; ok && res.err == nil {
				lamports = v
			}
			acc, err := d.accountJSON(pk, lamports, accountConfig{Encoding: cfg.Accounts.Encoding})
			if err != nil {
				return nil, err
			}
			list = append(list, acc)
		}
		accounts = list
	}
	var inner any
	if cfg.InnerInstructions {
		inner = []any{}
	}
	return wrap(b, map[string]any{
		"err":                    errJSON(res.err),
		"logs":                   logsOrEmpty(res.logs),
		"accounts":               accounts,
		"unitsConsumed":          res.cu,
		"returnData":             nil,
		"innerInstructions":      inner,
		"replacementBlockhash":   replacement,
		"loadedAccountsDataSize": 0,
		"fee":                    res.fee,
	}), nil
}

func rpcGetSignatureStatuses(d *Devnet, params []json.RawMessage) (any, *rpcError) {
	var sigs []string
	if err := required(params, 0, "signatures", &sigs); err != nil {
		return nil, err
	}
	if len(sigs) > maxSignatureStatusesQuery {
		return nil, invalidParams(msgTooManySignatures)
	}
	var cfg struct {
		SearchTransactionHistory bool `json:"searchTransactionHistory"`
	}
	if err := optional(params, 1, &cfg); err != nil {
		return nil, err
	}
	l := d.l
	root := l.bank(finalized).slot
	out := make([]any, 0, len(sigs))
	for _, s := range sigs {
		sig, err := parseSignature(s)
		if err != nil {
			return nil, err
		}
		rec, ok := l.txs[sig]
		if !ok || (!cfg.SearchTransactionHistory && rec.slot()+d.opts.StatusCacheSlots < root) {
			out = append(out, nil)
			continue
		}
		c, confirmations := l.statusOf(rec)
		out = append(out, map[string]any{
			"slot":               rec.slot(),
			"confirmations":      confirmations,
			"err":                errJSON(rec.res.err),
			"status":             statusJSON(rec.res.err),
			"confirmationStatus": c.String(),
		})
	}
	return wrap(l.tip(), out), nil
}

// atLeastConfirmed parses the commitment of methods that only serve
// confirmed or finalized data.
func (d *Devnet) atLeastConfirmed(cc commitmentConfig) (*block, *rpcError) {
	c, err := parseCommitment(cc.Commitment)
	if err != nil {
		return nil, err
	}
	if c == processed {
		return nil, invalidParams(msgCommitmentBelowConfirmed)
	}
	return d.bankAt(c, cc.MinContextSlot)
}

type txConfig struct {
	commitmentConfig
	Encoding                       string  `json:"encoding"`
	MaxSupportedTransactionVersion *uint64 `json:"maxSupportedTransactionVersion"`
}

func rpcGetTransaction(d *Devnet, params []json.RawMessage) (any, *rpcError) {
	var s string
	if err := required(params, 0, "signature", &s); err != nil {
		return nil, err
	}
	sig, err := parseSignature(s)
	if err != nil {
		return nil, err
	}
	var cfg txConfig
	if p := param(params, 1); p != nil && p[0] == '"' {
		_ = json.Unmarshal(p, &cfg.Encoding) // legacy form: the encoding alone
	} else if err := optional(params, 1, &cfg); err != nil {
		return nil, err
	}
	b, err := d.atLeastConfirmed(cfg.commitmentConfig)
	if err != nil {
		return nil, err
	}
	rec, ok := d.l.txs[sig]
	if !ok || !visible(rec, b) {
		return nil, nil
	}
	out, err := encodeTxWithMeta(rec, cfg.Encoding, cfg.MaxSupportedTransactionVersion, "full")
	if err != nil {
		return nil, err
	}
	out["slot"] = rec.slot()
	out["blockTime"] = rec.block.time
	return out, nil
}

func rpcGetSignaturesForAddress(d *Devnet, params []json.RawMessage) (any, *rpcError) {
	var s string
	if err := required(params, 0, "address", &s); err != nil {
		return nil, err
	}
	pk, err := parsePubkey(s)
	if err != nil {
		return nil, err
	}
	var cfg struct {
		commitmentConfig
		Limit  *int   `json:"limit"`
		Before string `json:"before"`
		Until  string `json:"until"`
	}
	if err := optional(params, 1, &cfg); err != nil {
		return nil, err
	}
	limit := maxSignaturesForAddressResult
	if cfg.Limit != nil {
		limit = *cfg.Limit
		if limit <= 0 || limit > maxSignaturesForAddressResult {
			return nil, invalidParams("Invalid limit; max %d", maxSignaturesForAddressResult)
		}
	}
	var before, until *solana.Signature
	if cfg.Before != "" {
		sig, err := parseSignature(cfg.Before)
		if err != nil {
			return nil, err
		}
		before = &sig
	}
	if cfg.Until != "" {
		sig, err := parseSignature(cfg.Until)
		if err != nil {
			return nil, err
		}
		until = &sig
	}
	b, err := d.atLeastConfirmed(cfg.commitmentConfig)
	if err != nil {
		return nil, err
	}
	l := d.l
	recs := l.byAddress[pk]
	i := len(recs) - 1 // newest first
	if before != nil {
		i = slices.IndexFunc(recs, func(r *txRecord) bool { return r.p.sig == *before }) - 1
		if i < -1 {
			i = -1 // an unknown `before` finds nothing
		}
	}
	out := []any{}
	for ; i >= 0 && len(out) < limit; i-- {
		rec := recs[i]
		if until != nil && rec.p.sig == *until {
			break
		}
		if !visible(rec, b) {
			continue
		}
		c, _ := l.statusOf(rec)
		out = append(out, map[string]any{
			"signature":          rec.p.sig.String(),
			"slot":               rec.slot(),
			"err":                errJSON(rec.res.err),
			"memo":               memoText(rec.p),
			"blockTime":          rec.block.time,
			"confirmationStatus": c.String(),
		})
	}
	return out, nil
}

func rpcGetBlockTime(d *Devnet, params []json.RawMessage) (any, *rpcError) {
	var slot uint64
	if err := required(params, 0, "slot", &slot); err != nil {
		return nil, err
	}
	b, err := d.lookupBlock(slot, d.l.bank(confirmed))
	if err != nil {
		return nil, err
	}
	return b.time, nil
}

// lookupBlock finds the block at slot as far as bank sees the chain.
func (d *Devnet) lookupBlock(slot uint64, bank *block) (*block, *rpcError) {
	if slot > bank.slot {
		return nil, &rpcError{Code: codeBlockNotAvailable, Message: "Block not available for slot " + u64s(slot)}
	}
	b, ok := d.l.bySlot[slot]
	if !ok {
		return nil, &rpcError{Code: codeSlotSkipped, Message: "Slot " + u64s(slot) + " was skipped, or missing due to ledger jump to recent snapshot"}
	}
	return b, nil
}

func rpcGetBlock(d *Devnet, params []json.RawMessage) (any, *rpcError) {
	var slot uint64
	if err := required(params, 0, "slot", &slot); err != nil {
		return nil, err
	}
	var cfg struct {
		txConfig
		TransactionDetails string `json:"transactionDetails"`
		Rewards            *bool  `json:"rewards"`
	}
	if p := param(params, 1); p != nil && p[0] == '"' {
		_ = json.Unmarshal(p, &cfg.Encoding)
	} else if err := optional(params, 1, &cfg); err != nil {
		return nil, err
	}
	bank, err := d.atLeastConfirmed(cfg.commitmentConfig)
	if err != nil {
		return nil, err
	}
	b, err := d.lookupBlock(slot, bank)
	if err != nil {
		return nil, err
	}
	out := map[string]any{
		"blockHeight":       b.height,
		"blockTime":         b.time,
		"blockhash":         b.hash.String(),
		"parentSlot":        b.parentSlot,
		"previousBlockhash": b.prevHash.String(),
	}
	if cfg.Rewards == nil || *cfg.Rewards {
		out["rewards"] = []any{}
	}
	switch details := cfg.TransactionDetails; details {
	case "", "full", "accounts":
		details = cmp.Or(details, "full")
		txs := make([]any, 0, len(b.txs))
		for _, rec := range b.txs {
			t, err := encodeTxWithMeta(rec, cfg.Encoding, cfg.MaxSupportedTransactionVersion, details)
			if err != nil {
				return nil, err
			}
			txs = append(txs, t)
		}
		out["transactions"] = txs
	case "signatures":
		sigs := make([]string, 0, len(b.txs))
		for _, rec := range b.txs {
			sigs = append(sigs, rec.p.sig.String())
		}
		out["signatures"] = sigs
	case "none":
	default:
		return nil, invalidParams("Invalid params: unknown variant `%s`, expected one of `full`, `signatures`, `none`, `accounts`.", details)
	}
	return out, nil
}

package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/keeperhq/keeper/receipt"
)

// receipts are the genuine receipts the vectors start from.
type receipts struct {
	both, evm, sol, v1, lone, v2, batchAndCkpt          receipt.Receipt
	testnet, ownChain, devnet, mixed, legacy, splitView receipt.Receipt
}

// checkpointRow is x's anchor of the checkpoint ref.
func checkpointRow(row receipt.AnchorRow, ref receipt.CheckpointRef) receipt.AnchorRow {
	row.LogSize, row.Root = ref.Size, ref.Root
	return row
}

// batchRow is x's anchor of batch id, of size entries, holding the
// evidence at index.
func batchRow(row receipt.AnchorRow, root [32]byte, id int64, index, size int) receipt.AnchorRow {
	row.Root, row.BatchID, row.LeafIndex, row.BatchSize = root, id, index, size
	return row
}

// build is receipt.Build over log l.
func build(l *memLog, id string, digest [32]byte, salt []byte, index uint64, anchors ...receipt.AnchorRow) (receipt.Receipt, error) {
	r, err := receipt.Build(context.Background(), receipt.Rows{EvidenceID: id, Digest: digest, Salt: salt, LogIndex: index, InLog: salt != nil,
		LogOrigin: origin, LogKey: l.vkey, Anchors: anchors, Checkpoints: l.notes}, l)
	if err != nil {
		return receipt.Receipt{}, fmt.Errorf("build the receipt of %s: %w", id, err)
	}
	return r, nil
}

func (w *world) receipts() (receipts, error) {
	e, s := &w.evm, &w.sol
	ck5, ck8 := checkpointRow(e.ckpt5.row(), w.ref5), checkpointRow(s.ckpt8.row(), w.ref8)
	v2Batch := batchRow(s.v2Batch.row(), w.v2Root, 201, 0, 3)
	var rs receipts
	var err error
	for _, b := range []struct {
		r       *receipt.Receipt
		l       *memLog
		id      string
		digest  [32]byte
		salt    []byte
		index   uint64
		anchors []receipt.AnchorRow
	}{
		{&rs.both, w.log, "ev_signed_contract", w.digest, w.salt, 2, []receipt.AnchorRow{ck5, ck8}},
		{&rs.evm, w.log, "ev_signed_contract", w.digest, w.salt, 2, []receipt.AnchorRow{ck5}},
		{&rs.sol, w.log, "ev_signed_contract", w.digest, w.salt, 2, []receipt.AnchorRow{ck8}},
		{&rs.v1, w.log, "ev_before_salts_1", w.v1Digests[1], nil, 0, []receipt.AnchorRow{batchRow(e.v1Batch.row(), w.v1Root, 101, 1, 4)}},
		{&rs.lone, w.log, "ev_never_in_the_log", w.loneDigest, nil, 0, []receipt.AnchorRow{batchRow(e.lone.row(), w.loneRoot, 102, 0, 1)}},
		{&rs.v2, w.log, "ev_before_the_log_0", w.v2Digests[0], w.v2Salts[0], 0, []receipt.AnchorRow{v2Batch}},
		{&rs.batchAndCkpt, w.log, "ev_before_the_log_0", w.v2Digests[0], w.v2Salts[0], 0, []receipt.AnchorRow{ck5, v2Batch}},
		{&rs.testnet, w.log, "ev_signed_contract", w.digest, w.salt, 2, []receipt.AnchorRow{checkpointRow(e.testnetCkpt5.row(), w.ref5)}},
		{&rs.ownChain, w.log, "ev_signed_contract", w.digest, w.salt, 2, []receipt.AnchorRow{checkpointRow(e.ownChainCkpt5.row(), w.ref5)}},
		{&rs.devnet, w.log, "ev_signed_contract", w.digest, w.salt, 2, []receipt.AnchorRow{checkpointRow(s.devnetCkpt8.row(), w.ref8)}},
		{&rs.mixed, w.log, "ev_signed_contract", w.digest, w.salt, 2, []receipt.AnchorRow{checkpointRow(e.testnetCkpt5.row(), w.ref5), ck8}},
		{&rs.legacy, w.log, "ev_signed_contract", w.digest, w.salt, 2, []receipt.AnchorRow{checkpointRow(e.legacy155.row(), w.ref5)}},
		{&rs.splitView, w.fork, "ev_signed_contract", w.digest, w.salt, 2, []receipt.AnchorRow{checkpointRow(e.forkCkpt5.row(), w.fork5)}},
	} {
		if *b.r, err = build(b.l, b.id, b.digest, b.salt, b.index, b.anchors...); err != nil {
			return receipts{}, err
		}
	}
	return rs, nil
}

// clone is a deep copy of r, to forge from.
func clone(r receipt.Receipt) receipt.Receipt {
	if r.Log != nil {
		l := *r.Log
		l.Inclusion = slices.Clone(l.Inclusion)
		r.Log = &l
	}
	r.Anchors = slices.Clone(r.Anchors)
	for i := range r.Anchors {
		r.Anchors[i].Path = slices.Clone(r.Anchors[i].Path)
		r.Anchors[i].Consistency = slices.Clone(r.Anchors[i].Consistency)
	}
	return r
}

// forged is a copy of r changed by change.
func forged(r receipt.Receipt, change func(*receipt.Receipt)) receipt.Receipt {
	r = clone(r)
	change(&r)
	return r
}

// swapped is r with anchor i naming the transaction row instead, as a
// receipt of r's version writes it (and, for version 3, existed_by
// following the anchors).
func swapped(r receipt.Receipt, i int, row receipt.AnchorRow) receipt.Receipt {
	return forged(r, func(r *receipt.Receipt) {
		a := &r.Anchors[i]
		a.TxRef, a.Block, a.BlockTime = row.TxRef, row.Block, row.BlockTime
		if r.Version != receipt.VersionUnsalted {
			a.BlockHash = row.BlockHash
		}
		if r.Version == receipt.Version {
			a.Account = row.Account
			r.ExistedBy = receipt.EarliestBlockTime(r.Anchors)
		}
	})
}

// jsonText is a receipt file as keeper writes one: indented JSON.
func jsonText(r receipt.Receipt) string {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		panic(fmt.Sprintf("encode receipt %s: %v", r.EvidenceID, err)) // plain data: cannot fail
	}
	return string(b) + "\n"
}

// tlogText is a version 3 receipt as a C2SP tlog-proof.
func tlogText(r receipt.Receipt) string {
	t, err := r.TLogProof()
	if err != nil {
		panic(fmt.Sprintf("tlog-proof of %s: %v", r.EvidenceID, err)) // a version 3 receipt: cannot fail
	}
	return t
}

// flipHex changes the last hex digit of s.
func flipHex(s string) string {
	last := s[len(s)-1]
	repl := byte('0')
	if last == '0' {
		repl = '1'
	}
	return s[:len(s)-1] + string(repl)
}

// flipSignature changes one byte of the signature on a signed note's last
// signature line.
func flipSignature(note string) string {
	body := strings.TrimSuffix(note, "\n")
	i := strings.LastIndexByte(body, ' ')
	sig, err := base64.StdEncoding.DecodeString(body[i+1:])
	if err != nil || len(sig) < 20 {
		panic(fmt.Sprintf("not a signed note: %q", note))
	}
	sig[4+10] ^= 1 // past the 4-byte key hash
	return body[:i+1] + base64.StdEncoding.EncodeToString(sig) + "\n"
}

// insertLine puts line before (after=false) or after the first line of
// text that starts with prefix.
func insertLine(text, prefix, line string, after bool) string {
	lines := strings.SplitAfter(text, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, prefix) {
			at := i
			if after {
				at = i + 1
			}
			return strings.Join(slices.Insert(lines, at, line+"\n"), "")
		}
	}
	panic(fmt.Sprintf("no line starts with %q", prefix))
}

// removeLine drops the first line of text that starts with prefix.
func removeLine(text, prefix string) string {
	lines := strings.SplitAfter(text, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, prefix) {
			return strings.Join(slices.Delete(lines, i, i+1), "")
		}
	}
	panic(fmt.Sprintf("no line starts with %q", prefix))
}

// replaceOnce replaces the first old in text, which must hold it.
func replaceOnce(text, old, new string) string {
	if !strings.Contains(text, old) {
		panic(fmt.Sprintf("%q not found", old))
	}
	return strings.Replace(text, old, new, 1)
}

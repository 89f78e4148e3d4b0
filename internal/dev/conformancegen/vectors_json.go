package main

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strings"

	"github.com/keeperhq/keeper/evlog/trust"
	"github.com/keeperhq/keeper/internal/dev/conformance"
	"github.com/keeperhq/keeper/receipt"
)

// receiptJSONVectors are v3-both-chains (and its tlog-proof) written as
// JSON a lax parser reads: each is refused by the format check, whatever
// a lax parser would make of it.
func (w *world) receiptJSONVectors(rs receipts) []spec {
	e, s := &w.evm, &w.sol
	const class = "receipt-json"
	text := jsonText(rs.both)
	other := sha256.Sum256([]byte("The signed contract, version 2.\n"))
	otherDigest := hex.EncodeToString(other[:])
	strict := func(name, receiptText, description string) spec {
		return spec{name: name, class: class, control: vBoth, check: checkFormat, description: description,
			receipt: receiptText, etherlink: w.evm1(e.ckpt5), solana: w.sol1(s.ckpt8)}
	}
	tlog := func(name, class, check, receiptText, description string) spec {
		return spec{name: name, class: class, control: vTLog, check: check, description: description,
			receipt: receiptText, format: conformance.FormatTLogProof, etherlink: w.evm1(e.ckpt5), solana: w.sol1(s.ckpt8)}
	}
	return []spec{
		strict("receipt-duplicate-digest-genuine-last", insertLine(text, `  "digest": `, `  "digest": "`+otherDigest+`",`, false),
			"v3-both-chains with a second digest key before the genuine one, naming another file: a parser that keeps the last value sees the genuine receipt."),
		strict("receipt-duplicate-digest-genuine-first", insertLine(text, `  "digest": `, `  "digest": "`+otherDigest+`",`, true),
			"v3-both-chains with a second digest key after the genuine one, naming another file: a parser that keeps the first value sees the genuine receipt."),
		strict("receipt-digest-key-upper-case", replaceOnce(text, `  "digest": `, `  "Digest": `),
			"v3-both-chains with its digest under the key Digest, which a parser matching keys without case reads as digest."),
		strict("receipt-unknown-field", insertLine(text, `  "version": `, `  "comment": "issued by keeper",`, false),
			"v3-both-chains with a field no receipt version defines (comment)."),
		strict("receipt-trailing-data", text+"{}\n",
			"v3-both-chains followed by a second JSON value ({}) after the receipt object."),
		strict("receipt-duplicate-tx-ref-in-anchor", insertLine(text, `      "tx_ref": `, `      "tx_ref": "`+w.evm.ckpt8.tx.Hash().Hex()+`",`, false),
			"v3-both-chains whose EtherLink anchor has a second tx_ref key, naming another transaction, before the genuine one: duplicate keys are refused inside anchors too."),
		strict("receipt-unknown-version", replaceOnce(text, `  "version": 3,`, `  "version": 4,`),
			"v3-both-chains labelled version 4, a version no verifier knows."),
		tlog("tlog-proof-extra-unknown-field", class, checkFormat, editExtra(tlogText(rs.both), func(x string) string { return `{"comment":"issued by keeper",` + x[1:] }),
			"v3-both-chains-tlog-proof whose extra data holds a field a keeper receipt does not define (comment)."),
		tlog("tlog-proof-extra-duplicate-digest", class, checkFormat, editExtra(tlogText(rs.both), func(x string) string { return `{"digest":"` + otherDigest + `",` + x[1:] }),
			"v3-both-chains-tlog-proof whose extra data names another file's digest before the genuine digest key."),
		tlog("tlog-proof-index-changed", "forged-inclusion", checkInclusion, tlogText(forged(rs.both, func(r *receipt.Receipt) { r.Log.Index = 3 })),
			"v3-both-chains-tlog-proof with index 3 instead of 2: the inclusion proof does not lead from there to the checkpoint's root."),
		tlog("tlog-proof-checkpoint-signature-changed", "forged-checkpoint", checkCheckpoint,
			tlogText(forged(rs.both, func(r *receipt.Receipt) { r.Log.Checkpoint = flipSignature(r.Log.Checkpoint) })),
			"v3-both-chains-tlog-proof with one byte of the signature on its checkpoint changed."),
	}
}

// editExtra rewrites the JSON of a tlog-proof's extra data line.
func editExtra(proof string, change func(string) string) string {
	lines := strings.SplitAfter(proof, "\n")
	b64, ok := strings.CutPrefix(strings.TrimSuffix(lines[1], "\n"), "extra ")
	raw, err := base64.StdEncoding.DecodeString(b64)
	if !ok || err != nil {
		panic("the tlog-proof's second line is not its extra data")
	}
	lines[1] = "extra " + base64.StdEncoding.EncodeToString([]byte(change(string(raw)))) + "\n"
	return strings.Join(lines, "")
}

// rootVectors are trust roots a verifier must refuse to pin, and trust
// updates it must refuse to take.
func (w *world) rootVectors(rs receipts) []spec {
	e, s := &w.evm, &w.sol
	text := string(w.mainRoot().Marshal())
	refused := func(name, class, control, trustText, description string) spec {
		return spec{name: name, class: class, control: control, check: checkTrust, description: description,
			receipt: jsonText(rs.both), trust: trustText, untrusted: trustText == "", etherlink: w.evm1(e.ckpt5), solana: w.sol1(s.ckpt8)}
	}
	update := func(name, updateText, description string) spec {
		v := refused(name, "trust-update", vUpdate, "", description)
		v.untrusted, v.update = false, updateText
		return v
	}
	removed := w.extendedRoot()
	removed.Accounts = append(removed.Accounts[:1:1], removed.Accounts[2:]...)
	fromZero := w.extendedRoot()
	fromZero.Accounts[2].Sizes.Start = 0
	otherLog := w.extendedRoot()
	otherLog.Log.Key = w.otherKey.Key().Text
	otherNote, err := trust.Sign(otherLog, w.otherKey)
	if err != nil {
		panic("sign a root with the key it names: " + err.Error()) // cannot fail
	}
	byOther, err := w.otherKey.SignText(text)
	if err != nil {
		panic("sign a root's text: " + err.Error()) // a JSON text with no blank line: cannot fail
	}
	return []spec{
		refused("root-duplicate-accounts", "root-json", vBoth, insertLine(text, `  "accounts": `, `  "accounts": [],`, false),
			"v3-both-chains pinned with a root holding the accounts key twice, an empty list first: a parser that keeps the last value sees the genuine root."),
		refused("root-accounts-key-upper-case", "root-json", vBoth, replaceOnce(text, `  "accounts": `, `  "Accounts": `),
			"v3-both-chains pinned with a root whose accounts are under the key Accounts, which a parser matching keys without case reads as accounts."),
		refused("root-unknown-field", "root-json", vBoth, insertLine(text, `  "mediaType": `, `  "comment": "pinned by hand",`, false),
			"v3-both-chains pinned with a root holding a field the format does not define (comment)."),
		refused("root-trailing-data", "root-json", vBoth, text+"{}\n",
			"v3-both-chains pinned with a root followed by a second JSON value ({})."),
		refused("signed-root-signature-byte-changed", "signed-root", vSignedRoot, flipSignature(w.signedRoot(w.mainRoot())),
			"v3-signed-trust-root with one byte of the root note's signature changed."),
		refused("signed-root-by-another-key", "signed-root", vSignedRoot, string(byOther),
			"v3-signed-trust-root with the root (naming the log's key) signed by another key instead: a signed root must verify under the key it names."),
		refused("no-trust-pinned", "no-trust", vBoth, "",
			"v3-both-chains checked with no trust root pinned: a verifier may not fall back to the key and accounts the receipt names itself."),
		update("trust-update-removes-an-account", w.signedRoot(removed),
			"v3-trust-update-extends with an update, signed by the log's key, that no longer lists keeper's Solana account: accounts are never removed."),
		update("trust-update-new-account-from-size-zero", w.signedRoot(fromZero),
			"v3-trust-update-extends with the new EtherLink account listed from size 0 instead of 9: a new account on a network already listed starts after the log's sizes it could not have anchored."),
		update("trust-update-changes-log-key", string(otherNote),
			"v3-trust-update-extends with an update naming another log key (and signed by it)."),
	}
}

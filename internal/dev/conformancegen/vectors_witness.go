package main

import (
	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/evlog/trust"
	"github.com/keeperhq/keeper/internal/dev/conformance"
	"github.com/keeperhq/keeper/receipt"
)

// The genuine witnessed vectors.
const (
	vWitnessed       = "v3-witnessed"
	vWitnessedUpdate = "v3-witnessed-trust-update"
)

// cosignedAt is when the corpus's witnesses cosign.
var cosignedAt = at("2026-02-11T09:00:00Z")

// witnessedRoot is the main root listing witnesses a, b and c from size 0
// and asking for 2 of them from size 0.
func (w *world) witnessedRoot() trust.Root {
	r := w.mainRoot()
	for _, x := range []*evlog.Witness{w.witA, w.witB, w.witC} {
		r.Witnesses.List = append(r.Witnesses.List, trust.Witness{Name: x.Key().Name, Key: x.Key().Text})
	}
	r.Witnesses.Quorum = []trust.QuorumStep{{From: 0, Witnesses: 2}}
	return r
}

// cosign appends each witness's cosignature of the signed checkpoint's body.
func cosign(signed string, ws ...*evlog.Witness) string {
	c, err := receipt.CheckpointBody(signed)
	if err != nil {
		panic("cosign a checkpoint that is not one: " + err.Error()) // the corpus's own checkpoints
	}
	for _, x := range ws {
		line, err := x.Cosign(c.Body(), cosignedAt)
		if err != nil {
			panic("cosign: " + err.Error()) // a time after 1970: cannot fail
		}
		signed += line
	}
	return signed
}

// witnessVectors are receipts whose checkpoint must carry the quorum of
// cosignatures the pinned root asks for (check witnesses; the audit finds
// the same of the checkpoint the log serves, which receipts name), roots
// whose witnesses cannot stand (check trust), and updates that lower a
// quorum or remove a witness.
func (w *world) witnessVectors(rs receipts) []spec {
	e, s := &w.evm, &w.sol
	rootText := string(w.witnessedRoot().Marshal())
	withCheckpoint := func(ckpt string) receipt.Receipt {
		return forged(rs.both, func(r *receipt.Receipt) { r.Log.Checkpoint = ckpt })
	}
	good := cosign(string(w.cp8), w.witA, w.witC)
	quorumShort := func(name, ckpt, description string) spec {
		return spec{name: name, class: "witness-quorum", control: vWitnessed, check: checkWitnesses, audit: findingQuorum,
			receipt: jsonText(withCheckpoint(ckpt)), trust: rootText, log: []string{string(w.cp5), ckpt},
			etherlink: w.evm1(e.ckpt5), solana: w.sol1(s.ckpt8), description: description}
	}
	retired := w.witnessedRoot()
	end := uint64(8)
	retired.Witnesses.List[2].Sizes.End = &end

	later := w.mainRoot()
	for _, x := range []*evlog.Witness{w.witA, w.witB} {
		later.Witnesses.List = append(later.Witnesses.List, trust.Witness{Name: x.Key().Name, Key: x.Key().Text})
	}
	later.Witnesses.Quorum = []trust.QuorumStep{{From: 9, Witnesses: 2}}

	raised := w.witnessedRoot()
	raised.Witnesses.Quorum = append(raised.Witnesses.Quorum, trust.QuorumStep{From: 9, Witnesses: 3})
	lowered := w.witnessedRoot()
	lowered.Witnesses.Quorum = []trust.QuorumStep{{From: 0, Witnesses: 1}}
	removed := w.witnessedRoot()
	removed.Witnesses.List = removed.Witnesses.List[:2]

	v1 := w.mainRoot()
	v1.MediaType = trust.MediaTypeV1
	v1Text := string(v1.Marshal())
	v1Quorum := replaceOnce(v1Text, `"quorum": 0`, `"quorum": 1`)
	v1KeyQuorum := replaceOnce(replaceOnce(v1Text, `"keys": []`, `"keys": [`+"\n      \""+w.witnessKey+"\"\n    ]"), `"quorum": 0`, `"quorum": 1`)
	aboveListed := replaceOnce(rootText, `"witnesses": 2`, `"witnesses": 4`)
	logKeyWitness := replaceOnce(rootText, w.witC.Key().Text, w.witnessKey)
	stepLowered := replaceOnce(rootText, "\"quorum\": [\n", "\"quorum\": [\n      {\n        \"from\": 0,\n        \"witnesses\": 3\n      },\n")

	badRoot := func(name, text, description string) spec {
		return spec{name: name, class: "witness-root", control: vWitnessed, check: checkTrust, receipt: jsonText(withCheckpoint(good)), trust: text,
			log: []string{string(w.cp5), good}, etherlink: w.evm1(e.ckpt5), solana: w.sol1(s.ckpt8), description: description}
	}
	badUpdate := func(name string, next trust.Root, description string) spec {
		return spec{name: name, class: "trust-update", control: vWitnessedUpdate, check: checkTrust, receipt: jsonText(withCheckpoint(good)),
			trust: w.signedRoot(w.witnessedRoot()), update: w.signedRoot(next), log: []string{string(w.cp5), good},
			etherlink: w.evm1(e.ckpt5), solana: w.sol1(s.ckpt8), description: description}
	}
	return []spec{
		{name: vWitnessed, class: classGenuine, receipt: jsonText(withCheckpoint(good)), trust: rootText, log: []string{string(w.cp5), good},
			etherlink: w.evm1(e.ckpt5), solana: w.sol1(s.ckpt8),
			description: "v3-both-chains pinned with a version 2 root that lists witnesses a, b and c and asks for 2 cosignatures from size 0; the receipt's checkpoint of size 8 carries the cosignatures (c2sp.org/tlog-cosignature) of a and c, and the log serves it so."},
		{name: "v3-witnessed-tlog-proof", class: classGenuine, receipt: tlogText(withCheckpoint(good)), format: conformance.FormatTLogProof, trust: rootText,
			log: []string{string(w.cp5), good}, etherlink: w.evm1(e.ckpt5), solana: w.sol1(s.ckpt8),
			description: "v3-witnessed written as a C2SP tlog-proof, the cosignature lines in its checkpoint."},
		{name: "v3-quorum-from-a-later-size", class: classGenuine, receipt: jsonText(rs.both), trust: string(later.Marshal()),
			etherlink: w.evm1(e.ckpt5), solana: w.sol1(s.ckpt8),
			description: "v3-both-chains pinned with a root that lists witnesses a and b and asks for 2 cosignatures only from size 9: the receipt's checkpoint of size 8 needs none, so a quorum added later fails no receipt of the sizes before it."},
		{name: "v3-trust-root-version-1", class: classGenuine, receipt: jsonText(rs.both), trust: v1Text, etherlink: w.evm1(e.ckpt5), solana: w.sol1(s.ckpt8),
			description: "v3-both-chains pinned with a version 1 root (witnesses as keys and a quorum of 0), which verifiers still read."},
		{name: vWitnessedUpdate, class: classGenuine, receipt: jsonText(withCheckpoint(good)), trust: w.signedRoot(w.witnessedRoot()),
			update: w.signedRoot(raised), log: []string{string(w.cp5), good}, etherlink: w.evm1(e.ckpt5), solana: w.sol1(s.ckpt8),
			description: "v3-witnessed with the root pinned as a signed note and a trust update, signed by the log's key, that raises the quorum to 3 from size 9."},

		quorumShort("witness-one-cosignature-of-two", cosign(string(w.cp8), w.witA),
			"v3-witnessed whose checkpoint carries only a's cosignature, one short of the quorum of 2."),
		quorumShort("witness-cosignature-byte-changed", flipSignature(good),
			"v3-witnessed with one byte of c's cosignature (its time) changed: a listed witness's cosignature that does not verify refuses the checkpoint."),
		quorumShort("witness-same-witness-twice", cosign(string(w.cp8), w.witA, w.witA),
			"v3-witnessed with a's cosignature twice instead of a's and c's: one witness counts once."),
		quorumShort("witness-unlisted-cosigner", cosign(string(w.cp8), w.witA, w.witX),
			"v3-witnessed with c's cosignature replaced by one of witness x, whom the root does not list."),
		quorumShort("witness-no-cosignature", string(w.cp8),
			"v3-witnessed with the checkpoint as the log signed it, with no cosignature."),
		{name: "witness-retired-before-size", class: "witness-quorum", control: vWitnessed, check: checkWitnesses, audit: findingQuorum,
			receipt: jsonText(withCheckpoint(good)), trust: string(retired.Marshal()), log: []string{string(w.cp5), good},
			etherlink: w.evm1(e.ckpt5), solana: w.sol1(s.ckpt8),
			description: "v3-witnessed pinned with a root that retired witness c at size 8: c's cosignature does not count for the checkpoint of size 8."},

		badRoot("witness-quorum-one-without-keys", v1Quorum,
			"v3-witnessed pinned instead with a version 1 root asking for a witness quorum of 1: version 1 asks for none; a root that needs witnesses is version 2."),
		badRoot("witness-quorum-one-with-a-key", v1KeyQuorum,
			"v3-witnessed pinned instead with a version 1 root listing one witness key and a quorum of 1."),
		badRoot("witness-root-quorum-above-listed", aboveListed,
			"v3-witnessed pinned with its root asking for 4 cosignatures of the 3 witnesses it lists: no checkpoint could carry them."),
		badRoot("witness-root-log-key-as-witness", logKeyWitness,
			"v3-witnessed pinned with its root listing, for witness c, a note key of type 0x01 (a log's) instead of an Ed25519 cosignature key (type 0x04)."),
		badRoot("witness-root-quorum-lowered", stepLowered,
			"v3-witnessed pinned with its root asking for 3 cosignatures from size 0 and then 2: a quorum is never lowered."),
		badUpdate("trust-update-lowers-quorum", lowered,
			"v3-witnessed-trust-update with an update that asks for 1 cosignature from size 0 instead of 2."),
		badUpdate("trust-update-removes-a-witness", removed,
			"v3-witnessed-trust-update with an update that no longer lists witness c: witnesses are retired at a size, never removed."),
	}
}

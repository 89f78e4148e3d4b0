package evlog_test

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/merkle"
)

// Sign a checkpoint of the log and open it as a verifier does, with nothing
// but the log's verifier key.
func Example() {
	// A log's key comes from evlog.GenerateKey; this one is made from a fixed
	// seed so that the example prints the same signature every run.
	skey, vkey, err := keyFromSeed("log.example.org", sha256.Sum256([]byte("example log key")))
	if err != nil {
		fmt.Println(err)
		return
	}
	signer, err := evlog.NewSigner(skey, "log.example.org")
	if err != nil {
		fmt.Println(err)
		return
	}

	// The log holds entries, each the salted commitment of one evidence.
	var entries [][]byte
	for i, doc := range []string{"contract.pdf", "invoice.pdf", "photo.jpg"} {
		salt := make([]byte, 16)
		salt[0] = byte(i) // keeper draws 16 random bytes
		e := evlog.EntryOf(salt, sha256.Sum256([]byte(doc)))
		entries = append(entries, e[:])
	}
	tree, err := merkle.Build(entries)
	if err != nil {
		fmt.Println(err)
		return
	}
	signed, err := signer.Sign(evlog.Checkpoint{Origin: signer.Origin(), Size: uint64(tree.Size()), Root: tree.Root()})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(string(signed))

	key, err := evlog.ParseKey(vkey) // a verifier pins this text
	if err != nil {
		fmt.Println(err)
		return
	}
	cp, err := key.Open(signed)
	fmt.Println("opened:", err, cp.Size, cp.Root == tree.Root())

	forged := strings.Replace(string(signed), "\n3\n", "\n4\n", 1)
	_, err = key.Open([]byte(forged))
	fmt.Println("forged size refused:", err != nil)
	// Output:
	// log.example.org
	// 3
	// Nav+K19B/7dVpRKA2nVi/QL44lzDggKJScepJ+YdZ2I=
	//
	// — log.example.org WfwBP/JAJuaL0vypqKhtquOLN9ZZoFyxVLHVq6aLH9ddmNDo27iyE3tYJs6GEDRkJNreEjqA+Tsh/64Mz+IYa7pHCgY=
	// opened: <nil> 3 true
	// forged size refused: true
}

// keyFromSeed writes the note signer and verifier keys of the Ed25519 key
// with the given seed, as evlog.GenerateKey writes a random one.
func keyFromSeed(origin string, seed [32]byte) (skey, vkey string, err error) {
	pub := ed25519.NewKeyFromSeed(seed[:]).Public().(ed25519.PublicKey)
	vkey, err = note.NewEd25519VerifierKey(origin, pub)
	if err != nil {
		return "", "", err
	}
	hash := strings.Split(vkey, "+")[1]
	skey = "PRIVATE+KEY+" + origin + "+" + hash + "+" + base64.StdEncoding.EncodeToString(append([]byte{1}, seed[:]...))
	return skey, vkey, nil
}

// A witness cosigns a checkpoint it checked (c2sp.org/tlog-cosignature);
// a verifier that pins the log's key and the witness's opens the note and
// counts the cosignatures of the witnesses it lists.
func ExampleOpenCosigned() {
	skey, vkey, err := keyFromSeed("log.example.org", sha256.Sum256([]byte("example log key")))
	if err != nil {
		fmt.Println(err)
		return
	}
	signer, err := evlog.NewSigner(skey, "log.example.org")
	if err != nil {
		fmt.Println(err)
		return
	}
	cp := evlog.Checkpoint{Origin: signer.Origin(), Size: 3, Root: sha256.Sum256([]byte("a root"))}
	signed, err := signer.Sign(cp)
	if err != nil {
		fmt.Println(err)
		return
	}

	seed := sha256.Sum256([]byte("example witness key"))
	w, err := evlog.NewWitness("witness.example.org", seed[:])
	if err != nil {
		fmt.Println(err)
		return
	}
	line, err := w.Cosign(cp.Body(), time.Unix(1_800_000_000, 0))
	if err != nil {
		fmt.Println(err)
		return
	}
	cosigned := append(signed, line...)

	logKey, _ := evlog.ParseKey(vkey)
	witnessKey, _ := evlog.ParseWitnessKey(w.Key().Text) // a verifier pins this text
	got, cosigs, err := evlog.OpenCosigned(cosigned, logKey, []evlog.WitnessKey{witnessKey})
	fmt.Println("opened:", err, got.Size, len(cosigs), cosigs[0].Witness, cosigs[0].Time.Format(time.RFC3339))
	// Output:
	// opened: <nil> 3 1 witness.example.org 2027-01-15T08:00:00Z
}

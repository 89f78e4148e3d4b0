package evlog_test

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strings"

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

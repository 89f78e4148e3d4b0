// Package tlogwitness is the wire format of c2sp.org/tlog-witness, the
// protocol a log uses to ask witnesses for cosignatures: the add-checkpoint
// request (the size the witness last cosigned, a consistency proof from it,
// and the signed checkpoint), the 409 answer naming the witness's size, and
// the 200 answer's cosignature lines. keeper's log speaks it to the
// witnesses a deployment configures, and keeper's witness answers it; the
// cosignatures themselves are evlog's (c2sp.org/tlog-cosignature).
package tlogwitness

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// AddCheckpointPath is the add-checkpoint call, under a witness's
// submission prefix.
const AddCheckpointPath = "/add-checkpoint"

// SizeContentType is the content type of a 409 answer: the size of the
// latest checkpoint the witness cosigned for the origin.
const SizeContentType = "text/x.tlog.size"

// MaxProofLines is the most consistency proof lines a request may carry.
const MaxProofLines = 63

// AddCheckpoint is an add-checkpoint request.
type AddCheckpoint struct {
	// OldSize is the size of the latest checkpoint the witness cosigned
	// for this log (0 when it never did, or the log does not know).
	OldSize uint64
	// Proof is the RFC 6962 consistency proof from OldSize to the
	// checkpoint's size (empty from 0).
	Proof [][32]byte
	// Checkpoint is the signed checkpoint note, signature lines included.
	Checkpoint []byte
}

// Marshal is the request's body.
func (r AddCheckpoint) Marshal() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "old %d\n", r.OldSize)
	for _, h := range r.Proof {
		b.WriteString(base64.StdEncoding.EncodeToString(h[:]) + "\n")
	}
	b.WriteString("\n")
	b.Write(r.Checkpoint)
	return b.Bytes()
}

// ParseAddCheckpoint reads a request body strictly: "old <size>" with no
// leading zero, at most MaxProofLines lines of 32-byte base64 hashes, an
// empty line, then the checkpoint; every line ends in a newline. What it
// says of the checkpoint (its signatures, its consistency) is the
// witness's to check.
func ParseAddCheckpoint(body []byte) (AddCheckpoint, error) {
	head, checkpoint, ok := bytes.Cut(body, []byte("\n\n"))
	if !ok {
		return AddCheckpoint{}, errors.New("tlogwitness: the request has no empty line before its checkpoint")
	}
	lines := strings.Split(string(head), "\n")
	var r AddCheckpoint
	size, ok := strings.CutPrefix(lines[0], "old ")
	if !ok {
		return AddCheckpoint{}, errors.New("tlogwitness: the request does not start with an old size line")
	}
	n, err := ParseSize(size)
	if err != nil {
		return AddCheckpoint{}, err
	}
	r.OldSize = n
	if len(lines)-1 > MaxProofLines {
		return AddCheckpoint{}, fmt.Errorf("tlogwitness: %d consistency proof lines, more than %d", len(lines)-1, MaxProofLines)
	}
	for _, l := range lines[1:] {
		h, err := base64.StdEncoding.DecodeString(l)
		if err != nil || len(h) != 32 {
			return AddCheckpoint{}, fmt.Errorf("tlogwitness: consistency proof line %q is not a 32-byte hash in base64", shorten(l))
		}
		r.Proof = append(r.Proof, [32]byte(h))
	}
	if len(checkpoint) == 0 || checkpoint[len(checkpoint)-1] != '\n' {
		return AddCheckpoint{}, errors.New("tlogwitness: the checkpoint is empty or does not end in a newline")
	}
	r.Checkpoint = checkpoint
	return r, nil
}

// ParseSize reads a tree size as the protocol writes it: ASCII decimal,
// no leading zero but for 0 itself.
func ParseSize(s string) (uint64, error) {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || (len(s) > 1 && s[0] == '0') {
		return 0, fmt.Errorf("tlogwitness: size %q is not a decimal number without leading zeros", shorten(s))
	}
	return n, nil
}

// FormatSize is a 409 answer's body: the size and a newline.
func FormatSize(n uint64) []byte { return []byte(strconv.FormatUint(n, 10) + "\n") }

// ParseConflict reads a 409 answer's body: the size of the latest
// checkpoint the witness cosigned for the origin.
func ParseConflict(body []byte) (uint64, error) {
	s, ok := strings.CutSuffix(string(body), "\n")
	if !ok {
		return 0, errors.New("tlogwitness: a size answer ends in a newline")
	}
	return ParseSize(s)
}

// ParseCosignatures reads a 200 answer's body: one or more note signature
// lines, each "— <name> <base64>\n". It checks their form only; the
// signatures are verified against the checkpoint (evlog.OpenCosigned),
// which ignores the lines of keys the log does not list.
func ParseCosignatures(body []byte) ([]string, error) {
	if len(body) == 0 || body[len(body)-1] != '\n' {
		return nil, errors.New("tlogwitness: the cosignatures are empty or do not end in a newline")
	}
	var out []string
	for _, l := range strings.SplitAfter(strings.TrimSuffix(string(body), "\n"), "\n") {
		line := strings.TrimSuffix(l, "\n")
		name, sig, ok := strings.Cut(strings.TrimPrefix(line, "— "), " ")
		raw, err := base64.StdEncoding.DecodeString(sig)
		if !strings.HasPrefix(line, "— ") || !ok || name == "" || err != nil || len(raw) < minSignature {
			return nil, fmt.Errorf("tlogwitness: %q is not a note signature line", shorten(line))
		}
		out = append(out, line+"\n")
	}
	return out, nil
}

// minSignature is the shortest signature line's decoded form: a 4-byte
// key ID and an Ed25519 signature, which every signature type keeper
// knows is at least as long as.
const minSignature = 4 + 64

func shorten(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

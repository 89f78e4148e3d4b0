package receipt

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/internal/strictjson"
)

// TLogProofHeader is the first line of a C2SP transparency log proof
// (c2sp.org/tlog-proof), the form of a version 3 receipt any tlog client
// reads: the entry's index, its inclusion proof and the signed checkpoint,
// with what keeper adds (the evidence, its salt, the log key and the chain
// anchors) as the proof's extra data. Saved, it is FILE.tlog-proof.
const TLogProofHeader = "c2sp.org/tlog-proof@v1"

// tlogExtra is a keeper tlog-proof's extra data: everything of a version 3
// receipt that the proof's own lines do not hold. The spec leaves it
// unauthenticated, and so does keeper: every field is checked as a
// receipt's is.
type tlogExtra struct {
	EvidenceID string    `json:"evidence_id"`
	Digest     string    `json:"digest"`
	Salt       string    `json:"salt"`
	Key        string    `json:"key,omitempty"` // the log's verifier key, as Log.Key
	Anchors    []Anchor  `json:"anchors"`
	ExistedBy  time.Time `json:"existed_by,omitzero"`
}

// TLogProof writes a version 3 receipt as a C2SP tlog-proof: the header, the
// extra data (base64 JSON of the evidence id, digest, salt, log key and
// anchors), "index N", the inclusion proof one base64 hash a line, an empty
// line and the signed checkpoint verbatim.
func (r Receipt) TLogProof() (string, error) {
	if r.Version != Version || r.Log == nil {
		return "", fmt.Errorf("receipt: only a version 3 receipt is a tlog-proof (this is version %d)", r.Version)
	}
	if !strings.HasSuffix(r.Log.Checkpoint, "\n") {
		return "", errors.New("receipt: the checkpoint is not a signed note (no final newline)")
	}
	extra, err := json.Marshal(tlogExtra{EvidenceID: r.EvidenceID, Digest: r.Digest, Salt: r.Salt, Key: r.Log.Key, Anchors: r.Anchors, ExistedBy: r.ExistedBy})
	if err != nil {
		return "", fmt.Errorf("receipt: tlog-proof extra data: %w", err)
	}
	var b strings.Builder
	b.WriteString(TLogProofHeader + "\n")
	b.WriteString("extra " + base64.StdEncoding.EncodeToString(extra) + "\n")
	b.WriteString("index " + strconv.FormatUint(r.Log.Index, 10) + "\n")
	hashes, err := decodeHashes(r.Log.Inclusion)
	if err != nil {
		return "", fmt.Errorf("receipt: inclusion: %w", err)
	}
	for _, h := range hashes {
		b.WriteString(base64.StdEncoding.EncodeToString(h[:]) + "\n")
	}
	b.WriteString("\n")
	b.WriteString(r.Log.Checkpoint)
	return b.String(), nil
}

// IsTLogProof tells whether data starts as a tlog-proof does.
func IsTLogProof(data []byte) bool {
	return bytes.HasPrefix(data, []byte(TLogProofHeader+"\n"))
}

// ParseTLogProof reads a tlog-proof keeper wrote (TLogProof) back into its
// version 3 receipt, validated as Parse validates one. A proof without
// keeper's extra data is refused: without the salt and digest its entry
// proves nothing about any file.
func ParseTLogProof(data []byte) (Receipt, error) {
	bad := func(format string, args ...any) (Receipt, error) {
		return Receipt{}, fmt.Errorf("receipt: tlog-proof: %s", fmt.Sprintf(format, args...))
	}
	text := string(data)
	lines := func() (string, bool) {
		line, rest, ok := strings.Cut(text, "\n")
		text = rest
		return line, ok
	}
	if line, ok := lines(); !ok || line != TLogProofHeader {
		return bad("the first line is not %q", TLogProofHeader)
	}
	line, _ := lines()
	extraText, ok := strings.CutPrefix(line, "extra ")
	if !ok {
		return bad("no extra data: a keeper receipt carries its evidence, salt and anchors there")
	}
	raw, err := base64.StdEncoding.DecodeString(extraText)
	if err != nil {
		return bad("extra data is not base64")
	}
	var extra tlogExtra
	// As strict as a receipt read as JSON: no key twice, none unknown.
	if err := strictjson.DecodeAs("the extra data", raw, &extra); err != nil {
		return bad("extra data is not keeper's JSON: %s", err.Message)
	}
	line, _ = lines()
	indexText, ok := strings.CutPrefix(line, "index ")
	index, err := strconv.ParseUint(indexText, 10, 64)
	if !ok || err != nil || strconv.FormatUint(index, 10) != indexText {
		return bad("%q is not \"index\" and a decimal number", line)
	}
	var inclusion []string
	for {
		line, ok := lines()
		if !ok {
			return bad("no empty line before the checkpoint")
		}
		if line == "" {
			break
		}
		h, err := base64.StdEncoding.DecodeString(line)
		if err != nil || len(h) != 32 {
			return bad("inclusion proof line %d is not a base64 SHA-256 hash", len(inclusion)+1)
		}
		inclusion = append(inclusion, hex.EncodeToString(h))
	}
	checkpoint := text
	body, _, ok := strings.Cut(checkpoint, "\n\n")
	if !ok {
		return bad("the checkpoint is not a signed note")
	}
	c, err := evlog.ParseBody(body + "\n")
	if err != nil {
		return bad("%v", err)
	}
	if inclusion == nil {
		inclusion = []string{}
	}
	r := Receipt{
		Version: Version, EvidenceID: extra.EvidenceID, Digest: extra.Digest, Salt: extra.Salt, Tree: TreeRFC6962,
		Log:     &Log{Origin: c.Origin, Key: extra.Key, Index: index, Checkpoint: checkpoint, Inclusion: inclusion},
		Anchors: extra.Anchors, ExistedBy: extra.ExistedBy,
	}
	// Parse checks the shape of every field, as for a receipt read as JSON.
	if raw, err = json.Marshal(r); err != nil {
		return bad("%v", err)
	}
	return Parse(raw)
}

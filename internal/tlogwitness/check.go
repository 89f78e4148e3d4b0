package tlogwitness

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/keeperhq/keeper/evlog"
)

// State is a witness's record of one log: the latest checkpoint it
// cosigned (size 0 and the empty tree's root before the first).
type State struct {
	Size uint64
	Root [32]byte
}

// EmptyRoot is the root of the empty tree (RFC 6962: the hash of the empty
// string), which a checkpoint of size 0 must carry.
var EmptyRoot = sha256.Sum256(nil)

// Verdict is a witness's answer to an add-checkpoint, as the protocol
// orders the checks: 404 for a log it does not witness, 403 for a
// checkpoint its key did not sign, 400 for an old size beyond the
// checkpoint, 409 (with the witness's size) for an old size that is not
// the one it cosigned last, 422 for a checkpoint that is not consistent
// with it, and 200 with the state to record before cosigning.
type Verdict struct {
	Status     int
	Checkpoint evlog.Checkpoint // the checkpoint, once its signature checked
	Next       State            // 200: the state to record
	Size       uint64           // 409: the size the witness cosigned last
	Reason     string           // why, for the witness's log and the refused requests it keeps
}

// Check decides an add-checkpoint request against the log's key (found by
// origin: ok false for a log the witness does not witness) and the
// witness's state for it. It only decides: recording Next and cosigning
// must happen atomically with reading state, which is the caller's.
func Check(req AddCheckpoint, keyOf func(origin string) (evlog.Key, bool), st State) Verdict {
	origin, _, _ := strings.Cut(string(req.Checkpoint), "\n")
	key, ok := keyOf(origin)
	if !ok {
		return Verdict{Status: http.StatusNotFound, Reason: fmt.Sprintf("no log %q is witnessed here", shorten(origin))}
	}
	c, err := key.Open(req.Checkpoint)
	if err != nil {
		var unverified *note.UnverifiedNoteError
		var invalid *note.InvalidSignatureError
		if errors.As(err, &unverified) || errors.As(err, &invalid) {
			return Verdict{Status: http.StatusForbidden, Reason: err.Error()}
		}
		return Verdict{Status: http.StatusBadRequest, Reason: err.Error()}
	}
	v := Verdict{Checkpoint: c}
	switch {
	case req.OldSize > c.Size:
		v.Status, v.Reason = http.StatusBadRequest, fmt.Sprintf("old size %d is beyond the checkpoint's %d", req.OldSize, c.Size)
	case req.OldSize != st.Size:
		v.Status, v.Size, v.Reason = http.StatusConflict, st.Size, fmt.Sprintf("old size %d is not %d, the size cosigned last", req.OldSize, st.Size)
	default:
		return consistent(req, c, st, v)
	}
	return v
}

// consistent checks the checkpoint extends the state it claims to extend.
func consistent(req AddCheckpoint, c evlog.Checkpoint, st State, v Verdict) Verdict {
	unprocessable := func(reason string) Verdict {
		v.Status, v.Reason = http.StatusUnprocessableEntity, reason
		return v
	}
	switch {
	case c.Size == 0 && c.Root != EmptyRoot:
		return unprocessable("a checkpoint of size 0 must have the empty tree's root")
	case req.OldSize == 0 && len(req.Proof) > 0:
		return unprocessable("from size 0 the consistency proof must be empty")
	case req.OldSize == c.Size && c.Root != st.Root:
		return unprocessable(fmt.Sprintf("another root at size %d, which was cosigned with a different one", c.Size))
	case req.OldSize > 0 && req.OldSize < c.Size:
		proof := make(tlog.TreeProof, len(req.Proof))
		for i, h := range req.Proof {
			proof[i] = tlog.Hash(h)
		}
		if err := tlog.CheckTree(proof, int64(c.Size), tlog.Hash(c.Root), int64(req.OldSize), tlog.Hash(st.Root)); err != nil {
			return unprocessable(fmt.Sprintf("the consistency proof from %d to %d does not verify: %v", req.OldSize, c.Size, err))
		}
	}
	v.Status, v.Next = http.StatusOK, State{Size: c.Size, Root: c.Root}
	return v
}

package evm

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gofrs/flock"
)

// signerLock extends the one-owner-per-signer rule across worker processes on
// one machine: Submit holds an exclusive file lock while it assigns a nonce,
// signs, journals and broadcasts, and the next nonce the last owner used is
// kept in the file, so a second process never reuses a nonce the node has not
// reported yet. Workers on different machines need different keys.
type signerLock struct {
	path string
	fl   *flock.Flock
}

func newSignerLock(path string) *signerLock {
	return &signerLock{path: path, fl: flock.New(path + ".lock")}
}

func (l *signerLock) lock(ctx context.Context) error {
	ok, err := l.fl.TryLockContext(ctx, 5*time.Millisecond)
	if err != nil {
		return fmt.Errorf("signer lock %s: %w", l.fl.Path(), err)
	}
	if !ok {
		return ctx.Err()
	}
	return nil
}

func (l *signerLock) unlock() { _ = l.fl.Unlock() }

// load returns the next nonce and when it was recorded ("" file: zero).
func (l *signerLock) load() (uint64, time.Time) {
	b, err := os.ReadFile(l.path)
	if err != nil {
		return 0, time.Time{}
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, time.Time{}
	}
	n, err1 := strconv.ParseUint(f[0], 10, 64)
	ms, err2 := strconv.ParseInt(f[1], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, time.Time{}
	}
	return n, time.UnixMilli(ms)
}

func (l *signerLock) store(next uint64, at time.Time) error {
	tmp := l.path + ".tmp"
	if err := os.WriteFile(tmp, []byte(fmt.Sprintf("%d %d\n", next, at.UnixMilli())), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, l.path)
}

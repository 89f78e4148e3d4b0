package epoch

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"

	"github.com/keeperhq/keeper/internal/retry"
)

// Artifact paths, relative to the artifact directory: sealed inputs are
// content-addressed (the same inputs are one file, whichever epoch they
// belong to); a run's other artifacts live under its epoch.
func inputsPath(hash string) string         { return filepath.Join("inputs", hash) }
func epochPath(epoch, name string) string   { return filepath.Join("epochs", epoch, name) }
func (a *Activities) abs(rel string) string { return filepath.Join(a.ArtifactDir, rel) }
func hexSum(h hash.Hash) string             { return hex.EncodeToString(h.Sum(nil)) }
func sha256Hex(b []byte) string             { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

// writeAtomic writes a file through a temporary file in the same directory
// and a rename, so readers (and a retried activity) see the old file or the
// whole new one, never a torn one. It returns the SHA-256 of what it wrote.
func writeAtomic(path string, write func(w io.Writer) error) (string, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	h := sha256.New()
	bw := bufio.NewWriterSize(io.MultiWriter(tmp, h), 1<<20)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return hexSum(h), nil
}

// readVerified reads an artifact and checks it still has the hash it was
// written with: a file changed behind keeper's back stops the epoch.
func (a *Activities) readVerified(rel, wantHash string) ([]byte, error) {
	b, err := os.ReadFile(a.abs(rel))
	if err != nil {
		return nil, fmt.Errorf("read artifact: %w", err)
	}
	if got := sha256Hex(b); got != wantHash {
		return nil, retry.Permanent(fmt.Errorf("artifact %s has SHA-256 %s, not the %s it was written with", rel, got, wantHash))
	}
	return b, nil
}

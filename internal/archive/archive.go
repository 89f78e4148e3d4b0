// Package archive is keeper's receipts archive (docs/production.md, "Storage and
// retention"): append-only, gzip-compressed files of one JSON receipt per
// line, written into one directory an operator can back up, and read back by
// evidence id.
package archive

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Ext ends every archive file's name.
const Ext = ".jsonl.gz"

// ErrNotFound is returned when no archive file holds the evidence.
var ErrNotFound = errors.New("archive: no receipt for this evidence")

// Write stores lines (each one JSON receipt, without a newline) as a new
// file in dir and returns its name. The file appears whole or not at all:
// it is written under a temporary name, synced, renamed, and the directory
// synced, so a crash never leaves a half file under an archive's name.
func Write(dir string, lines [][]byte) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("archive: %w", err)
	}
	var r [4]byte
	if _, err := rand.Read(r[:]); err != nil {
		return "", err
	}
	name := "receipts-" + time.Now().UTC().Format("20060102T150405.000Z") + "-" + hex.EncodeToString(r[:]) + Ext
	tmp, err := os.CreateTemp(dir, ".writing-*")
	if err != nil {
		return "", fmt.Errorf("archive: %w", err)
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	zw := gzip.NewWriter(tmp)
	bw := bufio.NewWriter(zw)
	for _, l := range lines {
		bw.Write(l)
		bw.WriteByte('\n')
	}
	err = errors.Join(bw.Flush(), zw.Close(), tmp.Sync(), tmp.Close())
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(dir, name))
	}
	if err == nil {
		err = syncDir(dir)
	}
	if err != nil {
		return "", fmt.Errorf("archive: write %s: %w", name, err)
	}
	return name, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

// Find returns the receipt of evidence id from the archive in dir: from the
// named file when file is not empty (what keeper's 410 answer names), else
// from whichever file holds it, newest first.
func Find(dir, file, id string) ([]byte, error) {
	files := []string{file}
	if file == "" {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return nil, fmt.Errorf("archive: %w", err)
		}
		files = nil
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), Ext) && !e.IsDir() {
				files = append(files, e.Name())
			}
		}
		slices.Reverse(files) // names sort by time
	} else if filepath.Base(file) != file {
		return nil, fmt.Errorf("archive: %q is not a file name", file)
	}
	for _, f := range files {
		r, err := findIn(filepath.Join(dir, f), id)
		if !errors.Is(err, ErrNotFound) {
			return r, err
		}
	}
	return nil, fmt.Errorf("%w %s in %s", ErrNotFound, id, dir)
}

func findIn(path, id string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("archive: %w", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("archive: %s: %w", filepath.Base(path), err)
	}
	want := []byte(`"` + id + `"`)
	sc := bufio.NewScanner(zr)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.Contains(line, want) {
			continue
		}
		var head struct {
			EvidenceID string `json:"evidence_id"`
		}
		if json.Unmarshal(line, &head) == nil && head.EvidenceID == id {
			return bytes.Clone(line), nil
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("archive: %s: %w", filepath.Base(path), err)
	}
	return nil, ErrNotFound
}

package devchain

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
)

// migrateNodeDir moves a persisted chain an older keeper left under another
// node name into dataDir/name. go-ethereum names a node's directory after
// the running binary unless told otherwise, so `go run ./cmd/keeper dev`
// and a build named differently each kept a chain of their own in the same
// data directory. When dataDir/name holds no chain and exactly one sibling
// does, that sibling is renamed (and logged). With several candidates
// nothing is guessed: the log names them, and a new chain starts.
func migrateNodeDir(dataDir, name string, log *slog.Logger) error {
	target := filepath.Join(dataDir, name)
	if hasChain(target) {
		return nil
	}
	entries, err := os.ReadDir(dataDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("devchain: read %s: %w", dataDir, err)
	}
	var found []string
	for _, e := range entries {
		if !e.IsDir() || e.Name() == name || e.Name() == "keystore" {
			continue
		}
		if dir := filepath.Join(dataDir, e.Name()); hasChain(dir) {
			found = append(found, dir)
		}
	}
	switch len(found) {
	case 0:
		return nil
	case 1:
		if _, err := os.Stat(target); err == nil {
			// An empty node directory (no chain in it) is in the way.
			if err := os.RemoveAll(target); err != nil {
				return fmt.Errorf("devchain: move the chain in %s to %s: %w", found[0], target, err)
			}
		}
		if err := os.Rename(found[0], target); err != nil {
			return fmt.Errorf("devchain: move the chain in %s to %s: %w", found[0], target, err)
		}
		log.Info("devchain: moved the chain an older keeper kept under its binary's name to the fixed directory", "from", found[0], "to", target)
		return nil
	default:
		log.Warn("devchain: several chains that older keepers kept under their binaries' names; none is moved, a new chain starts: rename the one to keep to the fixed directory",
			"found", strings.Join(found, ", "), "to", target)
		return nil
	}
}

// hasChain reports whether a node directory holds a chain database.
func hasChain(dir string) bool {
	st, err := os.Stat(filepath.Join(dir, "chaindata"))
	return err == nil && st.IsDir()
}

// Command conformancegen writes keeper's receipt conformance corpus
// (conformance/README.md): one JSON file per vector, made from fixed keys
// and fixed times, so that running it again changes nothing unless the
// generator changed. Run it from the repository's root:
//
//	go run ./internal/dev/conformancegen [-out conformance/vectors]
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

func main() {
	out := flag.String("out", filepath.Join("conformance", "vectors"), "the directory to write the vectors to")
	flag.Parse()
	files, err := Generate()
	if err == nil {
		err = write(*out, files)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "conformancegen:", err)
		os.Exit(1)
	}
	fmt.Printf("conformancegen: %d vectors in %s\n", len(files), *out)
}

// write makes dir hold exactly files: each written, and any other vector
// file (*.json) removed.
func write(dir string, files map[string][]byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	old, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return err
	}
	for _, p := range old {
		if _, keep := files[filepath.Base(p)]; !keep {
			if err := os.Remove(p); err != nil {
				return err
			}
		}
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if strings.ContainsAny(name, `/\`) {
			return fmt.Errorf("vector file %q: not a plain name", name)
		}
		if err := os.WriteFile(filepath.Join(dir, name), files[name], 0o644); err != nil {
			return err
		}
	}
	return nil
}

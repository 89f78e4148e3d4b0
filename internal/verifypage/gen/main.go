// Command gen builds the /verify page's verifier: receipt/verify compiled
// to WebAssembly (package ../wasm), gzipped into verifier.wasm.gz, and the
// Go toolchain's glue for it, wasm_exec.js, copied beside it; the page
// embeds both. `go generate ./internal/verifypage` runs it, and
// TestTheEmbeddedVerifierIsCurrent runs it into a temporary directory to
// compare. The output depends only on the sources and the Go version: the
// build is trimmed of paths and VCS stamps, and the gzip header carries no
// name and no time.
package main

import (
	"bytes"
	"compress/gzip"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

const pkg = "github.com/keeperhq/keeper/internal/verifypage/wasm"

func main() {
	out := flag.String("out", ".", "the directory to write verifier.wasm.gz and wasm_exec.js to")
	flag.Parse()
	if err := generate(*out); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func generate(dir string) error {
	tmp, err := os.MkdirTemp("", "keeper-verifier-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	module := filepath.Join(tmp, "verifier.wasm")
	build := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-ldflags=-s -w", "-o", module, pkg)
	build.Env = append(os.Environ(), "GOOS=js", "GOARCH=wasm", "GOFLAGS=", "CGO_ENABLED=0")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("go build %s for js/wasm: %w", pkg, err)
	}
	raw, err := os.ReadFile(module)
	if err != nil {
		return err
	}
	var gz bytes.Buffer
	w, err := gzip.NewWriterLevel(&gz, gzip.BestCompression) // the zero Header: no name, no time
	if err != nil {
		return err
	}
	if _, err := w.Write(raw); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		return fmt.Errorf("go env GOROOT: %w", err)
	}
	glue, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(goroot)), "lib", "wasm", "wasm_exec.js"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "verifier.wasm.gz"), gz.Bytes(), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "wasm_exec.js"), glue, 0o644)
}

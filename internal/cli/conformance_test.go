package cli

import (
	"encoding/hex"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/dev/conformance"
)

// The corpus (conformance/README.md), run through `keeper verify` as a user
// runs it: the files on disk, the endpoints as --rpc, the clocks as --clock;
// the verdict is the exit status, the failing check the one the output
// names, the bound the one it prints.
func TestKeeperVerifyRunsTheWholeCorpus(t *testing.T) {
	conformance.Each(t, func(t *testing.T, v conformance.Vector) {
		out, err := runCorpusVector(t, v)
		v.Assert(t, cliVerdict(out, err))
	})
}

func runCorpusVector(t *testing.T, v conformance.Vector) (string, error) {
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
		return path
	}
	name := "receipt.json"
	if v.ReceiptFormat == conformance.FormatTLogProof {
		name = "ev_000000000000000000000000.tlog-proof" // an evidence id's name: no original file beside it
	}
	args := []string{"verify", write(name, v.Receipt), "--rpc-only"}
	if v.Trust != "" {
		args = append(args, "--trust", write("trust", v.Trust))
	}
	if v.TrustUpdate != "" {
		args = append(args, "--trust-update", write("trust-update", v.TrustUpdate))
	}
	if v.File != "" {
		b, err := hex.DecodeString(v.File)
		require.NoError(t, err)
		args = append(args, "--file", write("original", string(b)))
	}
	for chain, urls := range conformance.Serve(t, v) {
		for _, u := range urls {
			args = append(args, "--rpc", chain+"="+u)
		}
	}
	for _, c := range v.Clocks {
		args = append(args, "--clock", c)
	}
	t.Setenv(LogKeyEnv, "")
	root := Root(nil)
	var out strings.Builder
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

var (
	failLine  = regexp.MustCompile(`(?m)^\s+\S+\s+FAIL\s+([a-z]+):`)
	errCheck  = regexp.MustCompile(`^([a-z]+): `)
	boundLine = regexp.MustCompile(`existed no later than (\S+)`)
)

// cliVerdict reads `keeper verify`'s verdict off its output and error.
func cliVerdict(out string, err error) conformance.Verdict {
	if err == nil {
		v := conformance.Verdict{OK: true, Detail: out}
		if m := boundLine.FindStringSubmatch(out); m != nil {
			v.ExistedBy, _ = time.Parse(time.RFC3339, m[1])
		}
		return v
	}
	v := conformance.Verdict{Detail: out + err.Error()}
	if m := failLine.FindStringSubmatch(out); m != nil {
		v.Check = m[1]
	} else if m := errCheck.FindStringSubmatch(err.Error()); m != nil {
		v.Check = m[1]
	}
	return v
}

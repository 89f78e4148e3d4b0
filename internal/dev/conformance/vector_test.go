package conformance

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const minimal = `{
  "name": "%s",
  "class": "genuine",
  "description": "d",
  "receipt": "{}",
  "receipt_format": "json",
  "trust": "",
  "clocks": [],
  "endpoints": {},
  "answers": {"etherlink-1": [{"method": "eth_getTransactionByHash", "params": ["0xab"], "result": null}]},
  "expect": {"verifier": {"verdict": "accept"}, "existed_by": "", "audit": {"finding": ""}}
}`

func writeVector(t *testing.T, dir, file, text string) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(dir, file), []byte(text), 0o644))
}

func TestLoadReadsVectorsSortedByName(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"b-vector", "a-vector", "c-vector"} {
		writeVector(t, dir, name+".json", fmt.Sprintf(minimal, name))
	}
	vs, err := Load(dir)
	require.NoError(t, err)
	require.Len(t, vs, 3)
	assert.Equal(t, []string{"a-vector", "b-vector", "c-vector"}, []string{vs[0].Name, vs[1].Name, vs[2].Name})
	assert.Equal(t, "null", string(vs[0].Answers["etherlink-1"][0].Result), "a recorded null result is kept")
}

func TestLoadRefusesAnUnknownField(t *testing.T) {
	dir := t.TempDir()
	writeVector(t, dir, "a.json", fmt.Sprintf(minimal, "a")[:1]+`"extra": 1,`+fmt.Sprintf(minimal, "a")[1:])
	_, err := Load(dir)
	require.ErrorContains(t, err, "extra")
}

func TestLoadRefusesAKeyInAnotherCase(t *testing.T) {
	dir := t.TempDir()
	writeVector(t, dir, "a.json", `{"Name": "a"}`)
	_, err := Load(dir)
	require.ErrorContains(t, err, "Name")
}

func TestLoadRefusesAVectorNamedOtherwiseThanItsFile(t *testing.T) {
	dir := t.TempDir()
	writeVector(t, dir, "a.json", fmt.Sprintf(minimal, "b"))
	_, err := Load(dir)
	require.ErrorContains(t, err, "not after its file")
}

func TestDirIsTheCheckedInCorpus(t *testing.T) {
	assert.True(t, filepath.IsAbs(Dir()))
	_, err := os.Stat(filepath.Join(Dir(), "..", "README.md"))
	require.NoError(t, err)
}

package tlogwitness_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/tlogwitness"
)

// The request body of the spec's example (c2sp.org/tlog-witness,
// add-checkpoint), byte for byte.
const specRequest = "old 20852014\n" +
	"PlRNCrwHpqhGrupue0L7gxbjbMiKA9temvuZZDDpkaw=\n" +
	"jrJZDmY8Y7SyJE0MWLpLozkIVMSMZcD5kvuKxPC3swk=\n" +
	"5+pKlUdi2LeF/BcMHBn+Ku6yhPGNCswZZD1X/6QgPd8=\n" +
	"/6WVhPs2CwSsb5rYBH5cjHV/wSmA79abXAwhXw3Kj/0=\n" +
	"\n" +
	specCheckpoint

const specCheckpoint = "example.com/behind-the-sofa\n" +
	"20852163\n" +
	"CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n" +
	"\n" +
	"— example.com/behind-the-sofa Az3grlgtzPICa5OS8npVmf1Myq/5IZniMp+ZJurmRDeOoRDe4URYN7u5/Zhcyv2q1gGzGku9nTo+zyWE+xeMcTOAYQ8=\n" +
	"— example.com/behind-the-sofa opLqBQsREYCgu6xQkYQwJr9fo45a62DN9EdmHXnZdXNqlcVGlCum2Wks+49/V6267UEjw6QUXTS5Rovnzv++qbSzm9Q=\n"

func TestTheSpecsExampleRequestParsesAndMarshalsBackByteForByte(t *testing.T) {
	r, err := tlogwitness.ParseAddCheckpoint([]byte(specRequest))
	require.NoError(t, err)
	assert.Equal(t, uint64(20852014), r.OldSize)
	require.Len(t, r.Proof, 4)
	assert.Equal(t, specCheckpoint, string(r.Checkpoint))
	assert.Equal(t, specRequest, string(r.Marshal()))

	first, err := tlogwitness.ParseAddCheckpoint([]byte("old 0\n\n" + specCheckpoint))
	require.NoError(t, err)
	assert.Zero(t, first.OldSize)
	assert.Empty(t, first.Proof, "from size 0 there is no proof")
	assert.Equal(t, "old 0\n\n"+specCheckpoint, string(first.Marshal()))
}

func TestARequestNotInTheProtocolsFormIsRefused(t *testing.T) {
	proofLine := "PlRNCrwHpqhGrupue0L7gxbjbMiKA9temvuZZDDpkaw=\n"
	for name, body := range map[string]string{
		"a leading zero":          "old 020852014\n\n" + specCheckpoint,
		"no old line":             proofLine + "\n" + specCheckpoint,
		"old without its space":   "old20852014\n\n" + specCheckpoint,
		"a negative size":         "old -1\n\n" + specCheckpoint,
		"no empty line":           "old 1\n" + specCheckpoint,
		"a 31-byte hash":          "old 1\nPlRNCrwHpqhGrupue0L7gxbjbMiKA9temvuZZDDpkQ==\n\n" + specCheckpoint,
		"a hash not in base64":    "old 1\nnot base64!\n\n" + specCheckpoint,
		"64 proof lines":          "old 1\n" + strings.Repeat(proofLine, 64) + "\n" + specCheckpoint,
		"no checkpoint":           "old 1\n\n",
		"no final newline":        "old 1\n\n" + strings.TrimSuffix(specCheckpoint, "\n"),
		"a line ending in \\r\\n": "old 1\r\n\n" + specCheckpoint,
	} {
		_, err := tlogwitness.ParseAddCheckpoint([]byte(body))
		assert.Error(t, err, name)
	}
	_, err := tlogwitness.ParseAddCheckpoint([]byte("old 1\n" + strings.Repeat(proofLine, 63) + "\n" + specCheckpoint))
	assert.NoError(t, err, "63 proof lines are the most allowed")
}

func TestTheConflictAnswerIsTheWitnessSizeAndANewline(t *testing.T) {
	assert.Equal(t, "20852014\n", string(tlogwitness.FormatSize(20852014)))
	n, err := tlogwitness.ParseConflict([]byte("20852014\n"))
	require.NoError(t, err)
	assert.Equal(t, uint64(20852014), n)
	for _, bad := range []string{"20852014", "020852014\n", "\n", "12 \n", "-3\n"} {
		_, err := tlogwitness.ParseConflict([]byte(bad))
		assert.Error(t, err, "%q", bad)
	}
}

// The response of the spec's example: three signature lines.
func TestTheSpecsExampleResponseIsThreeSignatureLines(t *testing.T) {
	body := "— witness.example/w1 CMp+6LWBU0anHGH5aNDTJkH/gj79sG+T6+iP2ThYN5krrDJbR1HDnucjL39QsZTSvVjyQLrdk3DXDqI5G2HgLatVs0pWh6Up69HVOw==\n" +
		"— witness.example/w1 I7rEps0pvK2UqkS2gSpVUDhrhVtQV9lgF6pRrWAvjJHjyWpW7VcE3SiOlVlbQNt64vWhO+DlkL0+UfzuOBMh9ChdMkP1vi/lCAsmlw==\n" +
		"— witness.example/w2 AWui8Sk55XjYLOijihBjhqEH6nS1ndDymE0a+6idX7pLcnoB+dhnz0854aLZgrrKbYKA7nC3HNJhm/kWl7oJlqU3rXXvpysAdyP3wQ==\n"
	lines, err := tlogwitness.ParseCosignatures([]byte(body))
	require.NoError(t, err)
	assert.Len(t, lines, 3)
	assert.Equal(t, body, strings.Join(lines, ""))
	for _, bad := range []string{"", "— witness.example/w1 CMp+6LWB\n", "- witness.example/w1 CMp+6LWBU0an\n", "— witness.example/w1\n", strings.TrimSuffix(body, "\n")} {
		_, err := tlogwitness.ParseCosignatures([]byte(bad))
		assert.Error(t, err, "%q", bad)
	}
}

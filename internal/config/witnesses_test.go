package config

import (
	"crypto/sha256"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/evlog"
)

func witnessVKey(t *testing.T, name string) string {
	t.Helper()
	seed := sha256.Sum256([]byte(name))
	w, err := evlog.NewWitness(name, seed[:])
	require.NoError(t, err)
	return w.Key().Text
}

func TestLogWitnessesAreAKeyAndAURLEachAndTheQuorumDefaultsToAllOfThem(t *testing.T) {
	a, b := witnessVKey(t, "a.example/w"), witnessVKey(t, "b.example/w")
	env := map[string]string{"KEEPER_LOG_WITNESSES": a + " https://a.example/w, " + b + " http://127.0.0.1:9000/"}
	c, err := Load(func(k string) string { return env[k] })
	require.NoError(t, err)
	ws, q, err := c.LogWitnesses()
	require.NoError(t, err)
	require.Len(t, ws, 2)
	assert.Equal(t, "a.example/w", ws[0].Key.Name)
	assert.Equal(t, "http://127.0.0.1:9000/", ws[1].URL)
	assert.Equal(t, 2, q)

	d := Default()
	none, q, err := d.LogWitnesses()
	require.NoError(t, err)
	assert.Empty(t, none)
	assert.Zero(t, q)
}

func TestBadLogWitnessesNameTheVariable(t *testing.T) {
	a := witnessVKey(t, "a.example/w")
	logKey := "log.keeper.example+e44af6e5+AW5ULB/J+3nIsI9wCYEL1Xt5GTKVyVGTIZcgUPNBMQHI"
	for name, env := range map[string]map[string]string{
		"no URL":         {"KEEPER_LOG_WITNESSES": a},
		"a log's key":    {"KEEPER_LOG_WITNESSES": logKey + " https://a.example/"},
		"a bad URL":      {"KEEPER_LOG_WITNESSES": a + " ftp://a.example/"},
		"credentials":    {"KEEPER_LOG_WITNESSES": a + " https://user:secret@a.example/"},
		"twice":          {"KEEPER_LOG_WITNESSES": a + " https://a.example/," + a + " https://b.example/"},
		"quorum too big": {"KEEPER_LOG_WITNESSES": a + " https://a.example/", "KEEPER_LOG_WITNESS_QUORUM": "2"},
		"quorum below 0": {"KEEPER_LOG_WITNESSES": a + " https://a.example/", "KEEPER_LOG_WITNESS_QUORUM": "-1"},
	} {
		_, err := Load(func(k string) string { return env[k] })
		require.Error(t, err, name)
		assert.Regexp(t, "^KEEPER_LOG_WITNESS(ES|_QUORUM): ", err.Error(), name)
		assert.NotContains(t, err.Error(), "secret", name)
	}
}

package idemkey_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/idemkey"
)

func TestFormatQuotesAKeyAsAStructuredFieldString(t *testing.T) {
	assert.Equal(t, `"abc"`, idemkey.Format("abc"))
	assert.Equal(t, `"say \"hi\" \\ bye"`, idemkey.Format(`say "hi" \ bye`))
	assert.Equal(t, `"a b"`, idemkey.Format("a b"), "a space is printable ASCII")
}

func TestFormatSendsAKeyAnSfStringCannotHoldBare(t *testing.T) {
	assert.Equal(t, "café-1", idemkey.Format("café-1"))
}

func TestParseReadsWhatFormatWrites(t *testing.T) {
	for _, key := range []string{"abc", `say "hi" \ bye`, `"`, `\`, `""`, "a b", "café-1", "upload-42"} {
		got, err := idemkey.Parse(idemkey.Format(key))
		require.NoError(t, err, key)
		assert.Equal(t, key, got)
	}
}

func TestParseTakesABareKeyAsItIs(t *testing.T) {
	for _, v := range []string{"upload-42", `a"b`, `a\b`, "x y"} {
		got, err := idemkey.Parse(v)
		require.NoError(t, err)
		assert.Equal(t, v, got)
	}
}

func TestParseReadsTheRFC8941Examples(t *testing.T) {
	for v, want := range map[string]string{
		`"hello world"`:     "hello world",
		` "padded" `:        "padded",
		`"8e2b4f1c-5d7a"`:   "8e2b4f1c-5d7a",
		`"back\\slash"`:     `back\slash`,
		`"quote\"inside"`:   `quote"inside`,
		`""`:                "",
		`"tab-free\\\"end"`: `tab-free\"end`,
	} {
		got, err := idemkey.Parse(v)
		require.NoError(t, err, v)
		assert.Equal(t, want, got, v)
	}
}

func TestParseRefusesAMalformedQuotedKey(t *testing.T) {
	for _, v := range []string{
		`"no closing quote`,
		`"bad \n escape"`,
		`"trailing backslash\`,
		`"two" "strings"`,
		`"with";param=1`,
		"\"tab\tinside\"",
		`"café"`,
	} {
		_, err := idemkey.Parse(v)
		assert.ErrorIs(t, err, idemkey.ErrMalformed, v)
	}
}

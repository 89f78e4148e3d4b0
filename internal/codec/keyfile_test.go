package codec_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"

	"github.com/keeperhq/keeper/internal/codec"
)

// Keys made with `openssl rand -base64 32`.
const (
	keyA = "UDNZHt/cOQP3m4FXSZKkfJxVJgy3sKMeqfja3s6Vbdk="
	keyB = "0lbeVbkpkcEbKp+0qD47ccNTRIBqg3Kc2XwQw15wrcE="
)

func writeKeyFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "codec.keys")
	require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	return p
}

func TestAKeyFileWithCommentsBlankLinesAndUnpaddedKeysLoads(t *testing.T) {
	p := writeKeyFile(t, "# keeper payload keys, newest first\n\n2026-06 "+keyB+"\r\n  2025-01\t"+strings.TrimRight(keyA, "=")+"  \n")
	c, err := codec.LoadFile(p)
	require.NoError(t, err)
	assert.Equal(t, "2026-06", c.EncryptKeyID())

	enc, err := c.Encode([]*commonpb.Payload{{Data: []byte("x")}})
	require.NoError(t, err)
	only2025, err := codec.LoadFile(writeKeyFile(t, "2025-01 "+keyA+"\n"))
	require.NoError(t, err)
	_, err = only2025.Decode(enc)
	assert.Error(t, err, "the first line encrypts")
}

func TestABadKeyFileIsAOneLineErrorThatNamesTheLineButNoKey(t *testing.T) {
	for name, c := range map[string]struct{ content, want string }{
		"empty":              {"", "no keys"},
		"only comments":      {"# nothing yet\n", "no keys"},
		"a key without id":   {keyA + "\n", "line 1: want `<key-id> <base64 key>`, got 1 field"},
		"fields swapped":     {keyA + " k1\n", "line 1: the key id must be"},
		"a short key":        {"k1 " + keyA[:20] + "\n", `line 1: key "k1" is not base64 of 32 bytes`},
		"a long key":         {"k1 " + keyA + keyB + "\n", `line 1: key "k1" is not base64 of 32 bytes`},
		"not base64":         {"k1 " + strings.Repeat("!", 43) + "\n", `line 1: key "k1" is not base64`},
		"a duplicate id":     {"k1 " + keyA + "\n# old\nk1 " + keyB + "\n", `line 3: key id "k1" is already used on line 1`},
		"three fields":       {"k1 " + keyA + " extra\n", "got 3 field(s)"},
		"an id too long":     {strings.Repeat("k", 33) + " " + keyA + "\n", "the key id must be"},
		"an id with a colon": {"k:1 " + keyA + "\n", "the key id must be"},
	} {
		t.Run(name, func(t *testing.T) {
			p := writeKeyFile(t, c.content)
			_, err := codec.LoadFile(p)
			require.Error(t, err)
			msg := err.Error()
			assert.Contains(t, msg, c.want)
			assert.Contains(t, msg, "KEEPER_CODEC_KEY_FILE "+p)
			assert.NotContains(t, msg, "\n", "one line")
			for _, k := range []string{keyA, keyB, keyA[:20], strings.TrimRight(keyA, "=")} {
				assert.NotContains(t, msg, k, "no key material")
			}
		})
	}
}

func TestAMissingKeyFileNamesTheSetting(t *testing.T) {
	_, err := codec.LoadFile(filepath.Join(t.TempDir(), "nope"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "KEEPER_CODEC_KEY_FILE: cannot read")
}

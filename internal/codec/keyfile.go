package codec

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// validID is what a key id may be: short enough that a base64 key (43 or 44
// characters) can never pass for one, so an error naming an id never prints
// key material even when a line's fields are swapped.
var validID = regexp.MustCompile(`^[A-Za-z0-9._-]{1,32}$`)

// LoadFile reads a key file (see ParseKeys) and returns its codec. Errors
// name the file and the line, never a key.
func LoadFile(path string) (*Codec, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("KEEPER_CODEC_KEY_FILE: cannot read %s", path)
	}
	keys, err := ParseKeys(b)
	if err != nil {
		return nil, fmt.Errorf("KEEPER_CODEC_KEY_FILE %s: %w", path, err)
	}
	return New(keys...)
}

// ParseKeys reads a key file: one key per line, `<key-id> <base64 of 32
// bytes>`, the first line encrypting and every line decrypting; blank lines
// and lines starting with # are skipped. Ids are 1–32 characters of letters,
// digits, '.', '_' and '-'. Errors give the line number, never its text.
func ParseKeys(b []byte) ([]Key, error) {
	var keys []Key
	seen := map[string]int{}
	for i, line := range bytes.Split(b, []byte("\n")) {
		n := i + 1
		text := strings.TrimSpace(string(line))
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		fields := strings.Fields(text)
		if len(fields) != 2 {
			return nil, fmt.Errorf("line %d: want `<key-id> <base64 key>`, got %d field(s)", n, len(fields))
		}
		id, secret := fields[0], fields[1]
		if !validID.MatchString(id) {
			return nil, fmt.Errorf("line %d: the key id must be 1–32 letters, digits, '.', '_' or '-' (is the key first?)", n)
		}
		if first, dup := seen[id]; dup {
			return nil, fmt.Errorf("line %d: key id %q is already used on line %d", n, id, first)
		}
		raw, err := decodeSecret(secret)
		if err != nil || len(raw) != KeySize {
			return nil, fmt.Errorf("line %d: key %q is not base64 of %d bytes (make one with `openssl rand -base64 32`)", n, id, KeySize)
		}
		k := Key{ID: id}
		copy(k.Secret[:], raw)
		clear(raw)
		seen[id] = n
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("no keys (want lines `<key-id> <base64 key>`, the first encrypts)")
	}
	return keys, nil
}

// decodeSecret accepts standard base64 with or without padding.
func decodeSecret(s string) ([]byte, error) {
	return base64.RawStdEncoding.DecodeString(strings.TrimRight(s, "="))
}

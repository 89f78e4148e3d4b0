package evlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// TileHeight is the height of every tile: 2^8 = 256 hashes (or entries) wide.
const TileHeight = 8

// TileWidth is the width of a full tile.
const TileWidth = 1 << TileHeight

// Tile names a hash tile (Level ≥ 0) or an entry bundle (Level EntriesLevel):
// its index N and, for a partial tile, its Width (1–255; 0 or 256 is full).
type Tile struct {
	Level int
	N     uint64
	Width int
}

// EntriesLevel is Tile.Level of an entry bundle.
const EntriesLevel = -1

// Full reports whether the tile holds TileWidth hashes or entries.
func (t Tile) Full() bool { return t.Width == 0 || t.Width == TileWidth }

// Path is the tile's path under the log's prefix, per c2sp.org/tlog-tiles:
// "tile/<L>/<N>[.p/<W>]" or "tile/entries/<N>[.p/<W>]", N written in groups
// of three digits, all but the last prefixed "x".
func (t Tile) Path() string {
	level := "entries"
	if t.Level != EntriesLevel {
		level = strconv.Itoa(t.Level)
	}
	p := "tile/" + level + "/" + indexPath(t.N)
	if !t.Full() {
		p += ".p/" + strconv.Itoa(t.Width)
	}
	return p
}

func indexPath(n uint64) string {
	s := strconv.FormatUint(n, 10)
	for len(s)%3 != 0 {
		s = "0" + s
	}
	var parts []string
	for i := 0; i < len(s); i += 3 {
		parts = append(parts, s[i:i+3])
	}
	for i := range len(parts) - 1 {
		parts[i] = "x" + parts[i]
	}
	return strings.Join(parts, "/")
}

// ParseTilePath reads a tile path ("tile/0/x001/234", "tile/entries/005.p/7").
func ParseTilePath(path string) (Tile, error) {
	bad := func(why string) (Tile, error) { return Tile{}, fmt.Errorf("evlog: tile path %q: %s", path, why) }
	rest, ok := strings.CutPrefix(path, "tile/")
	if !ok {
		return bad("does not start with tile/")
	}
	levelText, rest, ok := strings.Cut(rest, "/")
	if !ok {
		return bad("no index")
	}
	var t Tile
	if levelText == "entries" {
		t.Level = EntriesLevel
	} else {
		l, err := strconv.Atoi(levelText)
		if err != nil || l < 0 || l > 63 || strconv.Itoa(l) != levelText {
			return bad("level is not a number from 0 to 63")
		}
		t.Level = l
	}
	if idx, w, ok := strings.Cut(rest, ".p/"); ok {
		width, err := strconv.Atoi(w)
		if err != nil || width < 1 || width >= TileWidth || strconv.Itoa(width) != w {
			return bad("partial width is not a number from 1 to 255")
		}
		t.Width, rest = width, idx
	}
	parts := strings.Split(rest, "/")
	var digits strings.Builder
	for i, p := range parts {
		if i < len(parts)-1 {
			var ok bool
			if p, ok = strings.CutPrefix(p, "x"); !ok {
				return bad("index elements but the last start with x")
			}
		}
		if len(p) != 3 || strings.Trim(p, "0123456789") != "" {
			return bad("index elements are three digits")
		}
		digits.WriteString(p)
	}
	n, err := strconv.ParseUint(digits.String(), 10, 64)
	if err != nil {
		return bad("index out of range")
	}
	if indexPath(n) != rest {
		return bad("index is not in its shortest form")
	}
	t.N = n
	return t, nil
}

// EntryBundle encodes entries as an entry bundle: each a big-endian uint16
// length followed by its bytes.
func EntryBundle(entries [][32]byte) []byte {
	out := make([]byte, 0, len(entries)*34)
	for _, e := range entries {
		out = binary.BigEndian.AppendUint16(out, 32)
		out = append(out, e[:]...)
	}
	return out
}

// ParseEntryBundle decodes an entry bundle of keeper's log: every entry is
// 32 bytes.
func ParseEntryBundle(b []byte) ([][32]byte, error) {
	var out [][32]byte
	for len(b) > 0 {
		if len(b) < 2 {
			return nil, errors.New("evlog: entry bundle ends inside a length")
		}
		n := int(binary.BigEndian.Uint16(b))
		b = b[2:]
		if n != 32 || len(b) < n {
			return nil, fmt.Errorf("evlog: entry bundle holds a %d-byte entry; keeper's entries are 32 bytes", n)
		}
		var e [32]byte
		copy(e[:], b[:32])
		out = append(out, e)
		b = b[32:]
	}
	return out, nil
}

package anchor

import (
	"bytes"

	"github.com/keeperhq/keeper/internal/store"
)

// The fast way to read intake bodies. encoding/json by way of strictjson
// reads a body twice (once for its keys, once for its values) with
// reflection, and a batch once whole and once more per item: that was a
// seventh of keeper's CPU under bulk intake. These scanners read a body
// once, and only in its plainest form: each key the exact name of a field
// and given once, strings without escapes, the priority an integer of at
// most 18 digits, the metadata an object. Anything else, valid or not,
// makes them give up, and the body goes the slow way, whose answer (the
// evidence or the error) is the answer. What they accept, the slow way
// decodes to the same fields. They are given UTF-8 only.

// scanner reads JSON from b at i.
type scanner struct {
	b []byte
	i int
}

// space skips JSON's whitespace.
func (s *scanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek skips whitespace and says which byte comes next (0 at the end).
func (s *scanner) peek() byte {
	s.space()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// eat skips whitespace and then c, if c comes next.
func (s *scanner) eat(c byte) bool {
	if s.peek() == c {
		s.i++
		return true
	}
	return false
}

// null reads the literal null.
func (s *scanner) null() bool {
	if s.i+4 <= len(s.b) && string(s.b[s.i:s.i+4]) == "null" {
		s.i += 4
		return true
	}
	return false
}

// str reads a string with neither escapes nor control characters: what is
// between its quotes, which is what it decodes to.
func (s *scanner) str() ([]byte, bool) {
	if !s.eat('"') {
		return nil, false
	}
	for start := s.i; s.i < len(s.b); s.i++ {
		switch c := s.b[s.i]; {
		case c == '"':
			s.i++
			return s.b[start : s.i-1], true
		case c == '\\' || c < 0x20:
			return nil, false
		}
	}
	return nil, false
}

// optStr reads a string or null, and says whether it was a string.
func (s *scanner) optStr() (v []byte, given, ok bool) {
	if s.peek() == 'n' {
		return nil, false, s.null()
	}
	v, ok = s.str()
	return v, ok, ok
}

// integer reads an integer of 1–18 digits, with its sign. What follows is
// for the caller to judge: a fraction or an exponent is not a separator.
func (s *scanner) integer() (int, bool) {
	s.space()
	neg := s.i < len(s.b) && s.b[s.i] == '-'
	if neg {
		s.i++
	}
	start, n := s.i, 0
	for ; s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9'; s.i++ {
		n = n*10 + int(s.b[s.i]-'0')
	}
	if digits := s.i - start; digits == 0 || digits > 18 || (digits > 1 && s.b[start] == '0') {
		return 0, false
	}
	if neg {
		n = -n
	}
	return n, true
}

// object reads past an object or array by its brackets and strings alone,
// and answers its text: whether that is JSON is for the caller to check.
func (s *scanner) object() ([]byte, bool) {
	start, depth := s.i, 0
	for ; s.i < len(s.b); s.i++ {
		switch s.b[s.i] {
		case '"':
			for s.i++; s.i < len(s.b) && s.b[s.i] != '"'; s.i++ {
				if s.b[s.i] == '\\' {
					s.i++
				}
			}
			if s.i >= len(s.b) {
				return nil, false
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth == 0 {
				s.i++
				return s.b[start:s.i], true
			}
		}
	}
	return nil, false
}

// The fields of an evidence object, one bit each, to see a key given twice.
const (
	seenDigest = 1 << iota
	seenContent
	seenKey
	seenChains
	seenPriority
	seenMetadata
)

// evidence reads one evidence object into f, which it resets but for the
// room its chains had.
func (s *scanner) evidence(f *evidenceFields) bool {
	*f = evidenceFields{chains: f.chains[:0]}
	if !s.eat('{') {
		return false
	}
	if s.eat('}') {
		return true
	}
	seen := 0
	for {
		key, ok := s.str()
		if !ok || !s.eat(':') {
			return false
		}
		var bit int
		switch string(key) {
		case "digest":
			bit = seenDigest
			f.digest, f.hasDigest, ok = s.optStr()
		case "content":
			bit = seenContent
			f.content, f.hasContent, ok = s.optStr()
		case "idempotency_key":
			bit = seenKey
			f.key, f.hasKey, ok = s.optStr()
		case "chains":
			bit = seenChains
			ok = s.chains(f)
		case "priority":
			bit = seenPriority
			ok = s.priority(f)
		case "metadata":
			bit = seenMetadata
			ok = s.metadata(f)
		default:
			return false
		}
		if !ok || seen&bit != 0 {
			return false
		}
		seen |= bit
		if !s.eat(',') {
			return s.eat('}')
		}
	}
}

// chains reads a list of strings, or null.
func (s *scanner) chains(f *evidenceFields) bool {
	switch s.peek() {
	case 'n':
		return s.null()
	case '[':
		s.i++
	default:
		return false
	}
	if s.eat(']') {
		return true
	}
	for {
		c, ok := s.str()
		if !ok {
			return false
		}
		f.chains = append(f.chains, c)
		if !s.eat(',') {
			return s.eat(']')
		}
	}
}

// priority reads an integer, or null.
func (s *scanner) priority(f *evidenceFields) bool {
	if s.peek() == 'n' {
		return s.null()
	}
	f.priority, f.hasPriority = s.integer()
	return f.hasPriority
}

// metadata reads an object and checks it as evidence takes metadata, or
// reads null. Metadata that is refused, or is not an object, is left to the
// slow way: it says whether the body is JSON before it says that.
func (s *scanner) metadata(f *evidenceFields) bool {
	switch s.peek() {
	case 'n':
		return s.null()
	case '{':
	default:
		return false
	}
	raw, ok := s.object()
	if !ok {
		return false
	}
	md, aerr := checkMetadata(raw)
	if aerr != nil {
		return false
	}
	f.metadata, f.metadataChecked = md, true
	return true
}

// end says whether nothing but whitespace is left.
func (s *scanner) end() bool {
	s.space()
	return s.i == len(s.b)
}

// scanBody reads a whole intake body, UTF-8, into f.
func (f *evidenceFields) scanBody(body []byte) bool {
	s := scanner{b: body}
	return s.evidence(f) && s.end()
}

// scanBatch decodes a batch's body, UTF-8, as decodeBatch does, or says it
// cannot: then decodeBatch's slow way answers.
func scanBatch(body []byte, chains []string) (items []batchItem, nes []store.NewEvidence, at []int, ok bool) {
	s := scanner{b: body}
	if !s.eat('{') {
		return nil, nil, nil, false
	}
	if key, ok := s.str(); !ok || string(key) != "items" || !s.eat(':') || !s.eat('[') {
		return nil, nil, nil, false
	}
	n := min(bytes.Count(body, []byte("{")), maxBatchItems) // each item starts with one
	items = make([]batchItem, 0, n)
	nes = make([]store.NewEvidence, 0, n)
	at = make([]int, 0, n)
	var f evidenceFields
	for i := 0; ; i++ {
		if i == maxBatchItems || !s.evidence(&f) {
			return nil, nil, nil, false
		}
		ne, aerr := f.evidence(chains)
		if aerr != nil {
			items = append(items, batchItem{err: itemError(i, aerr)})
		} else {
			items = append(items, batchItem{})
			nes, at = append(nes, ne), append(at, i)
		}
		if !s.eat(',') {
			break
		}
	}
	if !s.eat(']') || !s.eat('}') || !s.end() {
		return nil, nil, nil, false
	}
	return items, nes, at, true
}

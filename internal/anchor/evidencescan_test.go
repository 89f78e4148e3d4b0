package anchor

import (
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var testChains = []string{"stub", "etherlink"}

// fieldValues are values for each evidence field, valid and not, in the
// plain forms the scanner reads and in others it leaves to strictjson.
var fieldValues = map[string][]string{
	"digest": {
		`"` + testHex("a") + `"`, `"` + strings.ToUpper(testHex("b")) + `"`, `"` + testHex("c")[:63] + `"`,
		`"` + testHex("d") + `0"`, `"zz"`, `""`, `null`, `5`, `true`, `[]`, `{}`,
		`"\u0064` + testHex("e")[1:] + `"`, `"` + testHex("f")[:10] + `\/` + testHex("f")[12:] + `"`,
		`"` + testHex("g")[:62] + `é"`, `"` + testHex("h")[:62] + "\x01" + `"`,
	},
	"content": {
		`"aGVsbG8="`, `"aGVsbG8"`, `""`, `"!!"`, `null`, `"aGV\/sbG8="`, `7`, `"YQ=="`, `"YQ==YQ=="`,
		`"` + strings.Repeat("QUJD", 5000) + `"`,
	},
	"chains": {
		`["stub"]`, `["etherlink","stub"]`, `["multi"]`, `["multi","stub"]`, `["stub","multi"]`, `["stub","stub"]`,
		`["multi","multi"]`, `[]`, `null`, `["nope"]`, `[null]`, `[1]`, `"stub"`, `["st\u0075b"]`, `["Stub"]`,
		`["stub",]`, `[,"stub"]`, `["stub" "etherlink"]`, `[ "stub" , "etherlink" ]`, `["` + strings.Repeat("x", 100) + `"]`,
		`["é"]`, `{"stub":1}`, `["stub"`,
	},
	"priority": {
		`1`, `10`, `5`, `0`, `11`, `-1`, `-0`, `5.0`, `1e1`, `1E1`, `"1"`, `null`, `01`, `00`, `-`, `--1`, `+1`,
		`99999999999999999999`, `123456789012345678`, `1234567890123456789`, `-123456789012345678`, `true`,
		`9223372036854775807`, `9223372036854775808`, `1.`, `[1]`,
	},
	"idempotency_key": {
		`"k"`, `""`, `"` + strings.Repeat("k", 256) + `"`, `"` + strings.Repeat("k", 257) + `"`, `"a\tb"`, `"a\u0000b"`,
		`"\u00e9"`, `"é"`, `"\ud800"`, `null`, `5`, `"key with spaces"`, "\"a\x7fb\"", `"a\"b"`,
	},
	"metadata": {
		`{}`, `{"a":[1,2,{"b":null}]}`, `{ "a" : 1 , "b" : [ ] }`, `[]`, `"x"`, `null`, `1`, `{"a":}`,
		`{"a":"}"}`, `{"a":"\"}"}`, `{"a":"\\"}`, `{"a":1]`, `{"a":[1}`, `{"a":1}}`, `{"a":"é\u00e9"}`,
		`{"` + strings.Repeat("m", maxMetadataBytes) + `":1}`, `{"m":"` + strings.Repeat("m", maxMetadataBytes-10) + `"}`,
		`{"a":1,"a":2}`, `{"A":{"b":{"c":[[[]]]}}}`, `{"a":tru}`, `{"a":"` + "\x01" + `"}`, `{`, `{"a":[`, `{"a":"\`,
	},
}

// otherKeys are keys that are no field, or a field's name in another form.
var otherKeys = []string{`"Digest"`, `"DIGEST"`, `"chain"`, `"foo"`, `"\u0064igest"`, `"priority "`, `""`, `"metadatA"`}

func testHex(seed string) string {
	d := sha256.Sum256([]byte(seed))
	return hex.EncodeToString(d[:])
}

// space is whitespace, mostly none.
func space(r *rand.Rand) string {
	if r.IntN(4) > 0 {
		return ""
	}
	return []string{" ", "\n", "\t", "\r\n  ", "  "}[r.IntN(5)]
}

// randomBody is an evidence body: mostly the usual fields in a plain form,
// sometimes with a field twice, an unknown key or odd spacing.
func randomBody(r *rand.Rand) string {
	names := []string{"digest", "chains"}
	for _, n := range []string{"content", "priority", "idempotency_key", "metadata"} {
		if r.IntN(3) == 0 {
			names = append(names, n)
		}
	}
	if r.IntN(5) == 0 {
		names = names[1:] // no digest
	}
	if r.IntN(8) == 0 {
		names = append(names, names[r.IntN(len(names))])
	}
	r.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	var b strings.Builder
	b.WriteString(space(r) + "{")
	for i, n := range names {
		if i > 0 {
			b.WriteString(space(r) + ",")
		}
		key := `"` + n + `"`
		if r.IntN(30) == 0 {
			key = otherKeys[r.IntN(len(otherKeys))]
		}
		vals := fieldValues[n]
		v := vals[0]
		if r.IntN(2) == 0 {
			v = vals[r.IntN(len(vals))]
		}
		b.WriteString(space(r) + key + space(r) + ":" + space(r) + v)
	}
	b.WriteString(space(r) + "}" + space(r))
	return b.String()
}

// mutate breaks a body in a small way, as a fuzzer would.
func mutate(r *rand.Rand, body string) string {
	if body == "" {
		return body
	}
	i := r.IntN(len(body))
	const bytes = "{}[]\",:\\ 0a-nul.e\x00\xff\xc3"
	c := string(bytes[r.IntN(len(bytes))])
	switch r.IntN(4) {
	case 0:
		return body[:i] + body[i+1:]
	case 1:
		return body[:i] + c + body[i:]
	case 2:
		return body[:i] + c + body[i+1:]
	default:
		return body[:i]
	}
}

// requireSameEvidence fails unless decodeEvidence and decodeItem answer
// body as they did before the scanner.
func requireSameEvidence(t *testing.T, body []byte) {
	t.Helper()
	requireSameEvidenceOn(t, body, testChains)
}

// requireSameEvidenceOn is requireSameEvidence with these chains configured.
func requireSameEvidenceOn(t *testing.T, body []byte, chains []string) {
	t.Helper()
	ne, aerr := decodeEvidence(body, chains)
	wantNE, wantErr := legacyDecodeEvidence(body, chains)
	require.Equal(t, wantErr, aerr, "%q", body)
	if wantErr == nil {
		require.Equal(t, wantNE, ne, "%q", body)
	}
	ne, aerr = decodeItem(body, chains, 7)
	wantNE, wantErr = legacyDecodeItem(body, chains, 7)
	require.Equal(t, wantErr, aerr, "item %q", body)
	if wantErr == nil {
		require.Equal(t, wantNE, ne, "item %q", body)
	}
}

// requireSameBatch fails unless decodeBatch answers body as it did before
// the scanner.
func requireSameBatch(t *testing.T, body []byte) {
	t.Helper()
	items, nes, at, aerr := decodeBatch(body, testChains)
	wantItems, wantNEs, wantAt, wantErr := legacyDecodeBatch(body, testChains)
	require.Equal(t, wantErr, aerr, "%.500q", body)
	require.Equal(t, len(wantItems), len(items), "%.500q", body)
	for i := range wantItems {
		require.Equal(t, wantItems[i], items[i], "item %d of %.500q", i, body)
	}
	require.Equal(t, wantNEs, nes, "%.500q", body)
	require.Equal(t, wantAt, at, "%.500q", body)
}

func TestTheScannerReadsPlainBodiesAndLeavesTheRestToStrictJSON(t *testing.T) {
	d := testHex("x")
	for _, body := range []string{
		`{"digest":"` + d + `","chains":["stub"]}`,
		` {"chains" : [ "multi" ] ,"content":"aGVsbG8=", "priority":-3, "idempotency_key":"é","metadata":{"a":"\"}"}}` + "\n",
		`{}`, `{"digest":null,"chains":null,"priority":null,"metadata":null,"content":null,"idempotency_key":null}`,
		`{"digest":"zz","chains":[],"priority":123456789012345678}`,
	} {
		var f evidenceFields
		assert.True(t, f.scanBody([]byte(body)), body)
	}
	for _, body := range []string{
		`{"digest":"\u0064","chains":["stub"]}`, `{"\u0064igest":"` + d + `"}`, `{"digest":"a","digest":"a"}`,
		`{"Digest":"a"}`, `{"priority":1.0}`, `{"priority":1e1}`, `{"priority":01}`, `{"priority":1234567890123456789}`,
		`{"chains":[null]}`, `{"chains":"stub"}`, `{"metadata":[]}`, `{"metadata":{"a":}}`, `{"digest":5}`,
		`{"digest":"a"} {}`, `{"digest":"a",}`, `[]`, ``, `{"digest":"a"`, `{"metadata":{"a":1}}}`,
		`{"metadata":{"` + strings.Repeat("m", maxMetadataBytes) + `":1}}`, "\ufeff{}", "{\"digest\":\"\x01\"}",
	} {
		var f evidenceFields
		assert.False(t, f.scanBody([]byte(body)), body)
		requireSameEvidence(t, []byte(body))
	}
}

func TestEvidenceBodiesAreAnsweredAsBeforeTheScanner(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	scanned := 0
	for range 20000 {
		body := randomBody(r)
		if r.IntN(4) == 0 {
			body = mutate(r, body)
		}
		var f evidenceFields
		if f.scanBody([]byte(body)) {
			scanned++
		}
		requireSameEvidence(t, []byte(body))
	}
	t.Logf("%d of 20000 bodies read by the scanner", scanned)
	assert.Greater(t, scanned, 5000, "the scanner reads most bodies")
	assert.Less(t, scanned, 15000, "strictjson reads many")
}

func TestChainsAreChosenAsBeforeTheScannerWhateverIsConfigured(t *testing.T) {
	many := []string{"c9", "c8", "c7", "c6", "c5", "c4", "c3", "c2", "c1", "stub"}
	for _, chains := range [][]string{nil, {}, {"stub"}, {"stub", "stub"}, {"solana", "etherlink", "stub"}, {"stub", "etherlink", "stub"}, many} {
		for _, list := range []string{`[]`, `["stub"]`, `["multi"]`, `["stub","multi"]`, `["multi","stub"]`, `["etherlink","solana","stub"]`,
			`["stub","stub"]`, `["c1","c9","stub"]`, `["c9","multi","c2"]`, `["solana","nope"]`, `["multi","multi"]`, `["` + strings.Repeat("n", 80) + `"]`} {
			requireSameEvidenceOn(t, []byte(`{"digest":"`+testHex("c")+`","chains":`+list+`}`), chains)
		}
	}
}

func TestBatchBodiesAreAnsweredAsBeforeTheScanner(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	plain := `{"digest":"` + testHex("p") + `","chains":["stub"]}`
	for range 3000 {
		n := 1 + r.IntN(8)
		items := make([]string, n)
		for i := range items {
			items[i] = plain
			if r.IntN(3) == 0 {
				items[i] = randomBody(r)
			}
			if r.IntN(20) == 0 {
				items[i] = []string{`null`, `7`, `"x"`, `[]`, `[{}]`, ``, `{`}[r.IntN(7)]
			}
		}
		body := space(r) + `{` + space(r) + `"items"` + space(r) + `:` + space(r) + `[` + space(r) +
			strings.Join(items, space(r)+","+space(r)) + space(r) + `]` + space(r) + `}` + space(r)
		if r.IntN(5) == 0 {
			body = mutate(r, body)
		}
		requireSameBatch(t, []byte(body))
	}
	many := func(n int) string { return `{"items":[` + strings.TrimSuffix(strings.Repeat(plain+",", n), ",") + `]}` }
	for _, body := range []string{
		many(1), many(maxBatchItems), many(maxBatchItems + 1), `{"items":[]}`, `{"items":null}`, `{}`, `[]`, ``, ` `,
		`{"items":[` + plain + `],"items":[` + plain + `]}`, `{"Items":[` + plain + `]}`, `{"items":[` + plain + `]} x`,
		`{"items":[` + plain + `]}{}`, `{"items":[` + plain + `],}`, `{"items":[` + plain + `,]}`, `{"items":{}}`,
		`{"\u0069tems":[` + plain + `]}`, "{\"items\":[" + plain + ",{\"digest\":\"\xff\"}]}", `{"items":[` + plain,
		`{"items":[{"digest":"zz"},` + plain + `,{"chains":["stub","stub"]},{"priority":"1"}]}`,
	} {
		requireSameBatch(t, []byte(body))
	}
}

// FuzzDecodingMatchesTheOldDecoders holds the decoders to answer whatever
// body as they did before the scanner: as a body, as an item, as a batch's
// items.
func FuzzDecodingMatchesTheOldDecoders(f *testing.F) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 50 {
		f.Add([]byte(randomBody(r)))
	}
	f.Add([]byte(`{"digest":"` + testHex("z") + `","chains":["stub","etherlink"],"metadata":{"n":1}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		requireSameEvidence(t, body)
		requireSameBatch(t, append(append([]byte(`{"items":[`), body...), ']', '}'))
		requireSameBatch(t, body)
	})
}

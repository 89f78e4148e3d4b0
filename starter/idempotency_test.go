package starter_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTheIdempotencyKeyHeaderActsAsTheBodysField(t *testing.T) {
	f := newFixture(t, 100)
	body := `{"digest":"` + hexDigest("header") + `","chains":["stub"]}`
	first := f.doWith(t, "POST", "/v1/evidence", body, map[string]string{"Idempotency-Key": "upload-42"})
	require.Equal(t, http.StatusAccepted, first.Code, first.Body.String())
	ev := decode[evidenceJSON](t, first)
	assert.Equal(t, "upload-42", ev.IdempotencyKey)

	// The draft's quoted form, and the key in the body, name the same evidence.
	again := f.doWith(t, "POST", "/v1/evidence", body, map[string]string{"Idempotency-Key": `"upload-42"`})
	require.Equal(t, http.StatusOK, again.Code, again.Body.String())
	assert.Equal(t, ev.ID, decode[evidenceJSON](t, again).ID)
	inBody := f.do(t, "POST", "/v1/evidence", `{"digest":"`+hexDigest("header")+`","chains":["stub"],"idempotency_key":"upload-42"}`)
	require.Equal(t, http.StatusOK, inBody.Code, inBody.Body.String())
	assert.Equal(t, ev.ID, decode[evidenceJSON](t, inBody).ID)

	// Another digest under the same header key is the body field's conflict.
	other := f.doWith(t, "POST", "/v1/evidence", `{"digest":"`+hexDigest("other")+`","chains":["stub"]}`, map[string]string{"Idempotency-Key": "upload-42"})
	requireRefused(t, other, http.StatusUnprocessableEntity, "idempotency_conflict", "idempotency_key")
	assert.Equal(t, []string{ev.ID}, f.stored(t))
}

func TestTheSameKeyInTheHeaderAndTheBodyIsAccepted(t *testing.T) {
	f := newFixture(t, 100)
	rec := f.doWith(t, "POST", "/v1/evidence", `{"digest":"`+hexDigest("both")+`","chains":["stub"],"idempotency_key":"k-1"}`, map[string]string{"Idempotency-Key": "k-1"})
	require.Equal(t, http.StatusAccepted, rec.Code, rec.Body.String())
	assert.Equal(t, "k-1", decode[evidenceJSON](t, rec).IdempotencyKey)
}

func TestADifferentKeyInTheHeaderAndTheBodyIsRefusedAndStoresNothing(t *testing.T) {
	f := newFixture(t, 100)
	rec := f.doWith(t, "POST", "/v1/evidence", `{"digest":"`+hexDigest("both")+`","chains":["stub"],"idempotency_key":"k-1"}`, map[string]string{"Idempotency-Key": "k-2"})
	requireRefused(t, rec, http.StatusBadRequest, "conflicting_idempotency_key", "Idempotency-Key")
	assert.Contains(t, decode[errorJSON](t, rec).Message, "idempotency_key")
	assert.Empty(t, f.stored(t))
}

func TestABadIdempotencyKeyHeaderIsRefused(t *testing.T) {
	f := newFixture(t, 100)
	body := `{"digest":"` + hexDigest("bad") + `","chains":["stub"]}`
	for name, key := range map[string]string{
		"an empty quoted key":  `""`,
		"a key of 300 bytes":   strings.Repeat("k", 300),
		"a key with a control": "a\x7fb",
	} {
		t.Run(name, func(t *testing.T) {
			rec := f.doWith(t, "POST", "/v1/evidence", body, map[string]string{"Idempotency-Key": key})
			requireRefused(t, rec, http.StatusBadRequest, "invalid_idempotency_key", "Idempotency-Key")
		})
	}
	assert.Empty(t, f.stored(t))
}

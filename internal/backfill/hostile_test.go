package backfill_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/httpapi/apitest"
	"github.com/keeperhq/keeper/internal/starter/openapitest"
	"github.com/keeperhq/keeper/internal/store"
)

// newHostileFixture serves the wallet routes, logging into logs.
func newHostileFixture(t *testing.T) (*fixture, *bytes.Buffer) {
	t.Helper()
	f, _ := newWalletFixture(t)
	logs := &bytes.Buffer{}
	f.api.Logger = slog.New(slog.NewTextHandler(logs, nil))
	f.w.Logger = f.api.Logger
	f.h = openapitest.Handler(t, f.api.Handler())
	return f, logs
}

// requireOneWalletStored checks that of the requests only the first add
// (evmWallet) was stored.
func (f *fixture) requireOneWalletStored(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	due, err := f.st.UnstartedWallets(ctx, 10)
	require.NoError(t, err)
	require.Len(t, due, 1)
	assert.Equal(t, evmWallet, due[0].Wallet)
	_, err = f.st.WalletStatus(ctx, solWallet)
	assert.ErrorIs(t, err, store.ErrNotFound)
}

func TestHostileRequestsOnTheWalletRoutesAre4xxWithAJSONErrorAndStoreNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, logs := newHostileFixture(t)
		// One wallet is there, so its reads get as far as their parameters.
		require.Equal(t, http.StatusAccepted, f.do(t, "POST", "/v1/wallets", `{"address":"`+evmWallet+`"}`).Code)

		tenMB := strings.Repeat("a", 10<<20)
		sol := func(extra string) string { return `{"address":"` + solWallet + `"` + extra + `}` }
		transfers := "/v1/wallets/" + evmWallet + "/transfers"

		rows := []struct {
			Name, Method, Path, Body string
			Header                   map[string]string // on top of Content-Type: application/json when there is a body
			Status                   int
			Code, Field              string
		}{
			// POST /v1/wallets.
			{"a wallet body cut short", "POST", "/v1/wallets", `{"address":"` + solWallet, nil, 400, "invalid_json", ""},
			{"a wallet body of two objects", "POST", "/v1/wallets", sol("") + sol(""), nil, 400, "invalid_json", ""},
			{"networks as a string", "POST", "/v1/wallets", sol(`,"networks":"solana"`), nil, 400, "invalid_type", "networks"},
			{"an address that is a huge number", "POST", "/v1/wallets", `{"address":1e999999}`, nil, 400, "invalid_type", "address"},
			{"a 10 MB wallet body", "POST", "/v1/wallets", `{"address":"` + tenMB + `"}`, nil, 413, "body_too_large", ""},
			{"an address of almost a megabyte of base58", "POST", "/v1/wallets", `{"address":"` + strings.Repeat("z", 1<<20-20) + `"}`, nil, 400, "invalid_address", "address"},
			{"an address with a Cyrillic homoglyph", "POST", "/v1/wallets", `{"address":"0x52908400098527886е0f7030069857d2e4169ee7"}`, nil, 400, "invalid_address", "address"},
			{"an address with a right-to-left override", "POST", "/v1/wallets", `{"address":"\u202e` + solWallet + `"}`, nil, 400, "invalid_address", "address"},
			{"an address with a NUL", "POST", "/v1/wallets", `{"address":"` + solWallet + `\u0000"}`, nil, 400, "invalid_address", "address"},
			{"an address in invalid UTF-8", "POST", "/v1/wallets", "{\"address\":\"\xff\xfe\"}", nil, 400, "invalid_json", ""},
			{"an address with an overlong encoding of '.'", "POST", "/v1/wallets", "{\"address\":\"\xc0\xae\xc0\xae\"}", nil, 400, "invalid_json", ""},
			{"networks given twice", "POST", "/v1/wallets", sol(`,"networks":["solana"],"networks":["etherlink"]`), nil, 400, "duplicate_field", "networks"},
			{"Address capitalised", "POST", "/v1/wallets", `{"Address":"` + solWallet + `"}`, nil, 400, "unknown_field", "Address"},
			{"a key with a Cyrillic homoglyph", "POST", "/v1/wallets", `{"аddress":"` + solWallet + `"}`, nil, 400, "unknown_field", "аddress"},
			{"an unknown wallet field", "POST", "/v1/wallets", sol(`,"label":"cold"`), nil, 400, "unknown_field", "label"},
			{"a network with a Cyrillic homoglyph", "POST", "/v1/wallets", sol(`,"networks":["ѕolana"]`), nil, 400, "unknown_network", "networks"},
			{"a null network", "POST", "/v1/wallets", sol(`,"networks":[null]`), nil, 400, "unknown_network", "networks"},
			{"a wallet sent as text/plain", "POST", "/v1/wallets", sol(""), map[string]string{"Content-Type": "text/plain"}, 415, "unsupported_media_type", "Content-Type"},
			{"a wallet sent as a form", "POST", "/v1/wallets", "address=" + solWallet, map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 415, "unsupported_media_type", "Content-Type"},
			{"a wallet in UTF-16", "POST", "/v1/wallets", sol(""), map[string]string{"Content-Type": "application/json; charset=utf-16"}, 415, "unsupported_media_type", "Content-Type"},
			{"GET on the wallet collection", "GET", "/v1/wallets", "", nil, 405, "method_not_allowed", ""},
			{"DELETE on the wallet collection", "DELETE", "/v1/wallets", "", nil, 405, "method_not_allowed", ""},
			// GET /v1/wallets/{address} and …/transfers.
			{"a wallet path escaping upwards", "GET", "/v1/wallets/..%2F..%2Fetc%2Fpasswd", "", nil, 400, "invalid_path", ""},
			{"a NUL address in the path", "GET", "/v1/wallets/%00", "", nil, 400, "invalid_address", "address"},
			{"an address in the path behind a right-to-left override", "GET", "/v1/wallets/%E2%80%AE" + solWallet, "", nil, 400, "invalid_address", "address"},
			{"an overlong '..' as the address", "GET", "/v1/wallets/%C0%AE%C0%AE", "", nil, 400, "invalid_address", "address"},
			{"an address of 60 KB in the path", "GET", "/v1/wallets/" + strings.Repeat("z", 60<<10), "", nil, 400, "invalid_address", "address"},
			{"POST on a wallet", "POST", "/v1/wallets/" + evmWallet, sol(""), nil, 405, "method_not_allowed", ""},
			{"a huge transfers limit", "GET", transfers + "?limit=99999999999999999999", "", nil, 400, "invalid_limit", "limit"},
			{"a transfers network with a Cyrillic homoglyph", "GET", transfers + "?network=%D1%95olana", "", nil, 400, "unknown_network", "network"},
			{"a NUL transfers cursor", "GET", transfers + "?cursor=%00", "", nil, 400, "invalid_cursor", "cursor"},
			{"limit given twice", "GET", transfers + "?limit=1&limit=5000", "", nil, 400, "duplicate_parameter", "limit"},
			{"Network capitalised", "GET", transfers + "?Network=solana", "", nil, 400, "unknown_parameter", "Network"},
			{"DELETE on transfers", "DELETE", transfers, "", nil, 405, "method_not_allowed", ""},
			{"a sub-resource of transfers", "GET", transfers + "/0x01", "", nil, 404, "not_found", ""},
		}

		apitest.RequireAllRefused(t, f.h, logs, rows)
		f.requireOneWalletStored(t)
	})
}

// A client that sends its headers and then only part of a wallet body is
// cut off at the server's read timeout with a 408, and nothing is stored.
func TestASlowLorisWalletBodyIsCutOffAtTheReadTimeoutAndStoresNothing(t *testing.T) {
	f, _ := newHostileFixture(t)
	srv := httptest.NewUnstartedServer(f.h)
	srv.Config.ReadTimeout = 300 * time.Millisecond
	srv.Start()
	t.Cleanup(srv.Close)

	pr, pw := io.Pipe()
	defer pw.Close()
	// The 408 with body_timeout is the read timeout's answer; the context
	// only keeps a server that never answers from hanging the run.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", srv.URL+"/v1/wallets", pr)
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	go func() { _, _ = pw.Write([]byte(`{"address":"` + solWallet + `"`)) }() // the rest never comes
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusRequestTimeout, resp.StatusCode, "%s", raw)
	var e apitest.Problem
	require.NoError(t, json.Unmarshal(raw, &e))
	assert.Equal(t, "body_timeout", e.Code)
	assert.NotEmpty(t, e.Message)
	_, err = f.st.WalletStatus(context.Background(), solWallet)
	assert.ErrorIs(t, err, store.ErrNotFound)
}

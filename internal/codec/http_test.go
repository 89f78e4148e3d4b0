package codec_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"

	"github.com/keeperhq/keeper/internal/codec"
)

func TestTheHandlerSpeaksTheRemoteCodecProtocolOfTheWebUIAndCLI(t *testing.T) {
	local := newCodec(t, newKey(t, "k1"))
	srv := httptest.NewServer(local.Handler())
	defer srv.Close()
	// The SDK's remote codec is what the temporal CLI's --codec-endpoint uses.
	remote := converter.NewRemotePayloadCodec(converter.RemotePayloadCodecOptions{Endpoint: srv.URL + "/codec"})

	plain := []*commonpb.Payload{
		{Metadata: map[string][]byte{"encoding": []byte("json/plain")}, Data: []byte(`{"Wallet":"0xabc"}`)},
		{Metadata: map[string][]byte{"encoding": []byte("binary/null")}},
	}
	enc, err := remote.Encode(plain)
	require.NoError(t, err)
	assert.Equal(t, "binary/encrypted", string(enc[0].Metadata["encoding"]))
	fromLocal, err := local.Decode(enc)
	require.NoError(t, err)
	assert.Equal(t, plain[0].Data, fromLocal[0].Data)

	dec, err := remote.Decode(enc)
	require.NoError(t, err)
	assert.Equal(t, plain[0].Data, dec[0].Data)
	assert.Equal(t, plain[1].Metadata, dec[1].Metadata)
}

func TestTheHandlerRefusesWhatItCannotDecode(t *testing.T) {
	enc, err := newCodec(t, newKey(t, "other")).Encode([]*commonpb.Payload{{Data: []byte("x")}})
	require.NoError(t, err)
	srv := httptest.NewServer(newCodec(t, newKey(t, "k1")).Handler())
	defer srv.Close()

	_, err = converter.NewRemotePayloadCodec(converter.RemotePayloadCodecOptions{Endpoint: srv.URL}).Decode(enc)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `key "other"`)
}

func TestAnOversizedCodecRequestGets413(t *testing.T) {
	srv := httptest.NewServer(newCodec(t, newKey(t, "k1")).Handler())
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/decode", "application/json", bytes.NewReader(make([]byte, codec.MaxRequestBytes+1)))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
}

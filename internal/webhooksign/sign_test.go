package webhooksign_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/webhooksign"
)

// The example of the Standard Webhooks specification (its reference
// libraries' tests use the same values).
func TestSignatureMatchesTheStandardWebhooksExample(t *testing.T) {
	sig, err := webhooksign.Signature("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_p5jXN8AQM9LWM0D4loKWxJek",
		time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`))
	require.NoError(t, err)
	assert.Equal(t, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=", sig)
}

func TestSetHeadersSetsTheThreeHeadersAndRefusesASecretThatIsNotWhsec(t *testing.T) {
	h := http.Header{}
	require.NoError(t, webhooksign.SetHeaders(h, []string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}, "msg_1", time.Unix(1700000000, 0), []byte(`{}`)))
	assert.Equal(t, "msg_1", h.Get("webhook-id"))
	assert.Equal(t, "1700000000", h.Get("webhook-timestamp"))
	assert.Regexp(t, `^v1,[A-Za-z0-9+/]{43}=$`, h.Get("webhook-signature"))

	for _, bad := range []string{"MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_not base64!", "whsec_"} {
		_, err := webhooksign.Signature(bad, "msg_1", time.Now(), nil)
		require.Error(t, err)
		if bad != "whsec_" {
			assert.NotContains(t, err.Error(), bad[6:], "the error shows no secret")
		}
	}
}

func TestSetHeadersWithTwoSecretsSignsWithBothNewFirstSpaceSeparated(t *testing.T) {
	const newer, older = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD"
	at, body := time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`)
	h := http.Header{}
	require.NoError(t, webhooksign.SetHeaders(h, []string{newer, older}, "msg_p5jXN8AQM9LWM0D4loKWxJek", at, body))
	sigNew, err := webhooksign.Signature(newer, "msg_p5jXN8AQM9LWM0D4loKWxJek", at, body)
	require.NoError(t, err)
	sigOld, err := webhooksign.Signature(older, "msg_p5jXN8AQM9LWM0D4loKWxJek", at, body)
	require.NoError(t, err)
	assert.Equal(t, sigNew+" "+sigOld, h.Get("webhook-signature"))

	assert.Error(t, webhooksign.SetHeaders(http.Header{}, nil, "msg_1", at, body), "no secret, no post")
	assert.Error(t, webhooksign.SetHeaders(http.Header{}, []string{newer, "whsec_not base64!"}, "msg_1", at, body))
}

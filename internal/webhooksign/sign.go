// Package webhooksign signs keeper's webhook deliveries the Standard Webhooks
// way (https://www.standardwebhooks.com): a webhook-id, a webhook-timestamp
// in unix seconds, and a webhook-signature "v1," + base64 of
// HMAC-SHA256(secret, id + "." + timestamp + "." + body), where the secret is
// the base64 after "whsec_". Receivers verify it with any Standard Webhooks
// library.
package webhooksign

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// SecretPrefix starts every signing secret.
const SecretPrefix = "whsec_"

// Header names of a delivery.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// errSecret never carries the secret it refuses.
var errSecret = errors.New("webhook: the signing secret is not whsec_ followed by base64")

// Signature returns the webhook-signature header value of body sent as
// delivery id at ts under secret.
func Signature(secret, id string, ts time.Time, body []byte) (string, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, SecretPrefix))
	if err != nil || !strings.HasPrefix(secret, SecretPrefix) || len(key) == 0 {
		return "", errSecret
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + strconv.FormatInt(ts.Unix(), 10) + "."))
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil)), nil
}

// SetHeaders signs body with each of secrets and sets the delivery's three
// headers and its content type on h. Several secrets (during a rotation's
// grace period: the new one, then the old) give several signatures,
// space-separated in one webhook-signature header as the specification
// allows, so a receiver holding either secret verifies the post.
func SetHeaders(h http.Header, secrets []string, id string, ts time.Time, body []byte) error {
	if len(secrets) == 0 {
		return errSecret
	}
	sigs := make([]string, 0, len(secrets))
	for _, secret := range secrets {
		sig, err := Signature(secret, id, ts, body)
		if err != nil {
			return err
		}
		sigs = append(sigs, sig)
	}
	h.Set("Content-Type", "application/json")
	h.Set(HeaderID, id)
	h.Set(HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
	h.Set(HeaderSignature, strings.Join(sigs, " "))
	return nil
}

// Package redact makes URLs fit for logs and error messages. It imports
// nothing of keeper's, so the store and the chain adapters can share it.
package redact

import (
	"net/url"
	"strings"
)

// mask replaces a secret that URL keeps the place of.
const mask = "xxxxx"

// secretParams are the query parameters URL masks, compared without case:
// PostgreSQL's passwords and the names RPC providers give API keys.
var secretParams = []string{"password", "sslpassword", "apikey", "api-key", "api_key", "access_token", "token", "secret"}

// URL is s with its secrets replaced by xxxxx: the password of its user info
// and the values of secret query parameters (password= and the like). The
// rest is kept, so a database URL still names its host and database. An
// unparsable s is "(unparsable URL)".
func URL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	q, masked := u.Query(), false
	for k := range q {
		if isSecret(k) {
			q.Set(k, mask)
			masked = true
		}
	}
	if masked {
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

func isSecret(param string) bool {
	for _, p := range secretParams {
		if strings.EqualFold(param, p) {
			return true
		}
	}
	return false
}

// Endpoint is s cut to its scheme and host, followed by "/…" when s has more
// (user info, path, query or fragment): providers put API keys in all of
// them. "" stays ""; anything without a scheme and a host is "[endpoint]".
func Endpoint(s string) string {
	if s == "" {
		return ""
	}
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "[endpoint]"
	}
	out := u.Scheme + "://" + u.Host
	if s != out {
		out += "/…"
	}
	return out
}

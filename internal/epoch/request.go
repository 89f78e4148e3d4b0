package epoch

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/keeperhq/keeper/api"
	"github.com/keeperhq/keeper/internal/httpapi"
	"github.com/keeperhq/keeper/internal/rewards"
	"github.com/keeperhq/keeper/internal/store"
)

const (
	maxSourceLen     = 2048
	maxEpochDeadline = 7 * 24 * time.Hour
)

var epochIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// decodeEpoch parses and validates a compute request. It is pure: nothing is
// stored until it succeeds. Inline usage comes back sealed (canonical), and
// its hash is the request's hash; a source request is hashed from its pool
// and URL.
func decodeEpoch(id string, body []byte) (store.NewEpoch, time.Duration, *httpapi.Error) {
	var req api.EpochRequest
	if err := httpapi.DecodeStrict(body, &req); err != nil {
		return store.NewEpoch{}, 0, err
	}
	given := httpapi.GivenFields(body)
	ne := store.NewEpoch{ID: id}
	if !given["pool"] {
		return ne, 0, httpapi.BadRequest("missing_field", "pool", "pool (a decimal string of integer minor units) is required")
	}
	pool, err := rewards.ParseAmount(req.Pool)
	if err != nil || pool.IsZero() || pool.Cmp(rewards.MaxPool) > 0 {
		return ne, 0, httpapi.BadRequest("invalid_pool", "pool", "pool must be a decimal string of integer minor units from 1 to 2^127 (170141183460469231731687303715884105728)")
	}
	ne.Pool = pool.String()

	var deadline time.Duration
	if given["deadline"] {
		d, err := time.ParseDuration(req.Deadline)
		if err != nil || d <= 0 || d > maxEpochDeadline {
			return ne, 0, httpapi.BadRequest("invalid_deadline", "deadline", "deadline must be a duration from now such as \"90s\", \"15m\" or \"2h\", at most 168h")
		}
		deadline = d
	}

	switch {
	case given["usage"] && given["source"]:
		return ne, 0, httpapi.BadRequest("conflicting_fields", "usage", "give either usage (inline) or source (a URL), not both")
	case given["usage"]:
		usage := make([]rewards.Usage, len(req.Usage))
		for i, u := range req.Usage {
			usage[i] = rewards.Usage(u)
		}
		if uerr := rewards.CheckUsage(usage); uerr != nil {
			field := "usage"
			if uerr.Index >= 0 {
				field = fmt.Sprintf("usage[%d].%s", uerr.Index, uerr.Field)
			}
			return ne, 0, httpapi.BadRequest(uerr.Code, field, uerr.Error())
		}
		sealed, err := rewards.Seal(pool, usage)
		if err != nil {
			return ne, 0, httpapi.BadRequest("invalid_usage", "usage", err.Error())
		}
		ne.Usage, ne.RequestHash = sealed, rewards.Hash(sealed)
	case given["source"]:
		// URLs are ASCII: a host that is not (a homoglyph, a right-to-left
		// override) would only fail later, at the fetch, or mislead whoever
		// reads the manifest. International hosts are written in punycode.
		u, err := url.Parse(req.Source)
		if err != nil || strings.ContainsFunc(req.Source, func(r rune) bool { return r <= ' ' || r > '~' }) ||
			(u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || len(u.String()) > maxSourceLen {
			return ne, 0, httpapi.BadRequest("invalid_source", "source", fmt.Sprintf("source must be an http or https URL in printable ASCII (punycode hosts) without credentials, at most %d characters", maxSourceLen))
		}
		ne.Source = u.String()
		h := sha256.Sum256([]byte("keeper-epoch-request v1\npool " + ne.Pool + "\nsource " + ne.Source + "\n"))
		ne.RequestHash = hex.EncodeToString(h[:])
	default:
		return ne, 0, httpapi.BadRequest("missing_field", "usage", "give usage (a list of {\"account\", \"units\"}) or source (the URL of an accounting service that answers that list)")
	}
	return ne, deadline, nil
}

func epochID(r *http.Request) (string, *httpapi.Error) {
	id := r.PathValue("id")
	if !epochIDPattern.MatchString(id) {
		return "", httpapi.BadRequest("invalid_id", "id", "epoch ids are 1–64 letters, digits, '.', '_' or '-', starting with a letter or digit")
	}
	return id, nil
}

// rerunRequested reads compute's rerun query parameter: true asks for a
// quarantined epoch to run again (docs/epochs.md, re-runs).
func rerunRequested(r *http.Request) (bool, *httpapi.Error) {
	switch v := r.URL.Query().Get("rerun"); v {
	case "", "false":
		return false, nil
	case "true":
		return true, nil
	}
	return false, httpapi.BadRequest("invalid_rerun", "rerun", "rerun must be true or false")
}

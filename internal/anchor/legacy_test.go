package anchor

// The intake decoders as they were before the fast path (commit b899443),
// kept word for word but for their names and for the request type, now
// api.EvidenceRequest with givenFields where it had pointers: the tests hold
// the decoders to answer every body exactly as these do.

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/keeperhq/keeper/api"
	"github.com/keeperhq/keeper/internal/httpapi"
	"github.com/keeperhq/keeper/internal/store"
)

func legacyDecodeEvidence(body []byte, chains []string) (store.NewEvidence, *httpapi.Error) {
	var req api.EvidenceRequest
	if err := httpapi.DecodeStrict(body, &req); err != nil {
		return store.NewEvidence{}, err
	}
	given := httpapi.GivenFields(body)
	var ne store.NewEvidence
	switch {
	case given["digest"] && given["content"]:
		return ne, httpapi.BadRequest("conflicting_fields", "digest", "give either digest or content, not both")
	case given["digest"]:
		b, err := hex.DecodeString(req.Digest)
		if err != nil || len(b) != sha256.Size {
			return ne, httpapi.BadRequest("invalid_digest", "digest", "digest must be a SHA-256 digest: 64 hex characters")
		}
		copy(ne.Digest[:], b)
	case given["content"]:
		b, err := base64.StdEncoding.DecodeString(req.Content)
		if err != nil {
			return ne, httpapi.BadRequest("invalid_content", "content", "content must be standard base64")
		}
		if len(b) == 0 {
			return ne, httpapi.BadRequest("invalid_content", "content", "content must not be empty")
		}
		ne.Digest = sha256.Sum256(b)
	default:
		return ne, httpapi.BadRequest("missing_field", "digest", "digest (hex SHA-256) or content (base64) is required")
	}

	if len(req.Chains) == 0 {
		return ne, missingChains(chains)
	}
	seen, listed := map[string]bool{}, map[string]bool{}
	for _, c := range req.Chains {
		switch {
		case listed[c]:
			return ne, httpapi.BadRequest("duplicate_chain", "chains", fmt.Sprintf("chain %q is listed twice", httpapi.Printable(c)))
		case c == "multi":
			for _, cc := range chains {
				seen[cc] = true
			}
		case !contains(chains, c):
			return ne, httpapi.BadRequest("unknown_chain", "chains", fmt.Sprintf("chain %q is not configured here (configured: %s; \"multi\" means all)", httpapi.Printable(c), strings.Join(chains, ", ")))
		default:
			seen[c] = true
		}
		listed[c] = true
	}
	for c := range seen {
		ne.Chains = append(ne.Chains, c)
	}
	sort.Strings(ne.Chains)

	ne.Priority = defaultPriority
	if given["priority"] {
		if req.Priority < 1 || req.Priority > 10 {
			return ne, httpapi.BadRequest("invalid_priority", "priority", "priority must be an integer from 1 (highest) to 10")
		}
		ne.Priority = req.Priority
	}
	if given["idempotency_key"] {
		if aerr := checkKey(req.IdempotencyKey, "idempotency_key"); aerr != nil {
			return ne, aerr
		}
		ne.IdempotencyKey = req.IdempotencyKey
	}
	if len(req.Metadata) > 0 && !bytes.Equal(req.Metadata, []byte("null")) {
		if len(req.Metadata) > maxMetadataBytes {
			return ne, httpapi.BadRequest("metadata_too_large", "metadata", fmt.Sprintf("metadata must be at most %d bytes of JSON", maxMetadataBytes))
		}
		if bytes.TrimSpace(req.Metadata)[0] != '{' {
			return ne, httpapi.BadRequest("invalid_metadata", "metadata", "metadata must be a JSON object")
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, req.Metadata); err != nil {
			return ne, httpapi.BadRequest("invalid_metadata", "metadata", "metadata must be a JSON object")
		}
		ne.Metadata = compact.Bytes()
	}
	return ne, nil
}

func legacyDecodeBatch(body []byte, chains []string) (items []batchItem, nes []store.NewEvidence, at []int, aerr *httpapi.Error) {
	var req batchRequest
	if aerr := httpapi.DecodeStrict(body, &req); aerr != nil {
		return nil, nil, nil, aerr
	}
	switch n := len(req.Items); {
	case n == 0:
		return nil, nil, nil, httpapi.BadRequest("missing_field", "items", fmt.Sprintf("items must list 1–%d evidence, each the body POST /v1/evidence takes", maxBatchItems))
	case n > maxBatchItems:
		return nil, nil, nil, httpapi.BadRequest("too_many_items", "items", fmt.Sprintf("items lists %d evidence; a request takes at most %d: send the rest in another", n, maxBatchItems))
	}

	items = make([]batchItem, len(req.Items))
	nes = make([]store.NewEvidence, 0, len(req.Items))
	at = make([]int, 0, len(req.Items)) // the item of each of nes
	for i, raw := range req.Items {
		ne, aerr := legacyDecodeItem(raw, chains, i)
		if aerr != nil {
			items[i].err = aerr
			continue
		}
		nes, at = append(nes, ne), append(at, i)
	}
	return items, nes, at, nil
}

func legacyDecodeItem(raw json.RawMessage, chains []string, i int) (store.NewEvidence, *httpapi.Error) {
	if len(raw) == 0 || raw[0] != '{' {
		name := itemName(i)
		return store.NewEvidence{}, httpapi.BadRequest("invalid_json", name, name+" must be a JSON object: the body POST /v1/evidence takes")
	}
	ne, aerr := legacyDecodeEvidence(raw, chains)
	if aerr != nil {
		return ne, itemError(i, aerr)
	}
	return ne, nil
}

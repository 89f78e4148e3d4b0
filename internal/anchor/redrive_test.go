package anchor_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/api"
	"github.com/keeperhq/keeper/internal/httpapi/apitest"
	"github.com/keeperhq/keeper/internal/store"
)

// deadLetter submits n evidence, forms them into one batch and dead-letters it.
func (f *fixture) deadLetter(t *testing.T, tag string, n int) (store.Batch, []string) {
	t.Helper()
	var ids []string
	for i := range n {
		ids = append(ids, f.submit(t, fmt.Sprint(tag, i), 5).ID)
	}
	ctx := context.Background()
	b, ok, err := f.st.FormBatch(ctx, "stub", 100)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, f.st.DeadLetterBatch(ctx, b.ID, "stub: provider down"))
	return b, ids
}

func TestADeadLetteredBatchIsRedrivenInOneCall(t *testing.T) {
	f := newFixture(t, 100)
	b, ids := f.deadLetter(t, "outage", 5)
	other, _ := f.deadLetter(t, "other", 2)

	rec := f.do(t, "POST", "/v1/dead-letters/redrive", fmt.Sprintf(`{"batch": %d, "dry_run": true}`, b.ID))
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	dry := apitest.Decode[api.RedriveResult](t, rec)
	assert.True(t, dry.DryRun)
	assert.Equal(t, 5, dry.Evidence)
	assert.Equal(t, map[string]int{"stub": 5}, dry.ByChain)
	require.Len(t, dry.Batches, 1)
	assert.Equal(t, b.ID, dry.Batches[0].ID)
	assert.Equal(t, "stub: provider down", dry.Batches[0].LastError)
	assert.Equal(t, ids, dry.EvidenceIDs)
	assert.Equal(t, "dead_letter", f.get(t, ids[0]).Status, "a dry run changes nothing")

	rec = f.do(t, "POST", "/v1/dead-letters/redrive", fmt.Sprintf(`{"batch": %d}`, b.ID))
	require.Equal(t, http.StatusAccepted, rec.Code, rec.Body.String())
	done := apitest.Decode[api.RedriveResult](t, rec)
	assert.False(t, done.DryRun)
	assert.Equal(t, 5, done.Evidence)
	assert.Equal(t, ids, done.EvidenceIDs)
	for _, id := range ids {
		ev := f.get(t, id)
		assert.Equal(t, "pending", ev.Status)
		assert.Zero(t, ev.Attempts)
	}
	assert.Equal(t, "dead_letter", f.get(t, apitest.Decode[api.RedriveResult](t, f.do(t, "POST", "/v1/dead-letters/redrive",
		fmt.Sprintf(`{"batch": %d, "dry_run": true}`, other.ID))).EvidenceIDs[0]).Status, "another batch is left alone")

	rec = f.do(t, "POST", "/v1/dead-letters/redrive", fmt.Sprintf(`{"batch": %d}`, b.ID))
	require.Equal(t, http.StatusAccepted, rec.Code, rec.Body.String())
	again := apitest.Decode[api.RedriveResult](t, rec)
	assert.Zero(t, again.Evidence, "re-running after success re-drives nothing")
	assert.Empty(t, again.Batches)
	assert.Empty(t, again.EvidenceIDs)

	rec = f.do(t, "GET", "/metrics", "")
	assert.Contains(t, rec.Body.String(), `keeper_evidence_redriven_total{chain="stub"} 5`)

	// {} re-drives every dead letter left.
	rec = f.do(t, "POST", "/v1/dead-letters/redrive", `{}`)
	require.Equal(t, http.StatusAccepted, rec.Code, rec.Body.String())
	assert.Equal(t, 2, apitest.Decode[api.RedriveResult](t, rec).Evidence)
	rec = f.do(t, "GET", "/metrics", "")
	assert.Contains(t, rec.Body.String(), `keeper_evidence_redriven_total{chain="stub"} 7`)
}

func TestRetryingOneEvidenceCountsAsARedrive(t *testing.T) {
	f := newFixture(t, 100)
	_, ids := f.deadLetter(t, "single", 1)
	require.Equal(t, http.StatusAccepted, f.do(t, "POST", "/v1/evidence/"+ids[0]+"/retry", "").Code)
	rec := f.do(t, "GET", "/metrics", "")
	assert.Contains(t, rec.Body.String(), `keeper_evidence_redriven_total{chain="stub"} 1`)
}

func TestARedriveFilterIsCheckedFieldByField(t *testing.T) {
	f := newFixture(t, 100)
	_, ids := f.deadLetter(t, "kept", 1)
	for _, tc := range []struct {
		name, body, code, field string
	}{
		{"an unknown chain", `{"chain": "bitcoin"}`, "unknown_chain", "chain"},
		{"a negative batch", `{"batch": -1}`, "invalid_batch", "batch"},
		{"a time that is not RFC 3339", `{"since": "yesterday"}`, "invalid_time", "since"},
		{"an empty range", `{"since": "2026-01-02T00:00:00Z", "until": "2026-01-01T00:00:00Z"}`, "invalid_time_range", "until"},
		{"an unknown field", `{"chains": ["stub"]}`, "unknown_field", "chains"},
		{"a dry run that is not a boolean", `{"dry_run": "yes"}`, "invalid_type", "dry_run"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			apitest.RequireRefused(t, f.do(t, "POST", "/v1/dead-letters/redrive", tc.body), http.StatusBadRequest, tc.code, tc.field)
		})
	}
	assert.Equal(t, "dead_letter", f.get(t, ids[0]).Status, "nothing was re-driven")
}

func TestRedriveSelectsByTheTimeOfDeadLettering(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, 100)
		_, before := f.deadLetter(t, "before", 1)
		time.Sleep(5 * time.Millisecond)
		cut := time.Now().UTC().Format(time.RFC3339Nano)
		time.Sleep(5 * time.Millisecond)
		_, after := f.deadLetter(t, "after", 1)

		rec := f.do(t, "POST", "/v1/dead-letters/redrive", `{"chain": "stub", "since": "`+cut+`"}`)
		require.Equal(t, http.StatusAccepted, rec.Code, rec.Body.String())
		assert.Equal(t, after, apitest.Decode[api.RedriveResult](t, rec).EvidenceIDs)
		assert.Equal(t, "dead_letter", f.get(t, before[0]).Status)
		assert.Equal(t, "pending", f.get(t, after[0]).Status)
	})
}

func TestReadinessShowsEachChainsAgesWithoutFailingOnThem(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, 100)
		f.deadLetter(t, "dead", 1)
		f.submit(t, "waiting", 5)
		time.Sleep(20 * time.Millisecond)

		rec := f.do(t, "GET", "/readyz", "")
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		got := apitest.Decode[struct {
			Ready     bool `json:"ready"`
			Anchoring map[string]struct {
				OldestUnconfirmedAge float64 `json:"oldest_unconfirmed_age_seconds"`
				LastSuccessAt        string  `json:"last_success_at"`
			} `json:"anchoring"`
		}](t, rec)
		assert.True(t, got.Ready, "a waiting evidence and a dead letter do not make the node unready")
		require.Contains(t, got.Anchoring, "stub")
		assert.GreaterOrEqual(t, got.Anchoring["stub"].OldestUnconfirmedAge, 0.02, "the waiting evidence's age, not the dead letter's")
		assert.Empty(t, got.Anchoring["stub"].LastSuccessAt, "nothing confirmed yet")
	})
}

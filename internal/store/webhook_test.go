package store_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/store/storetest"
	"github.com/keeperhq/keeper/internal/webhooksign"
)

// unstarted returns the pending deliveries no workflow was started for.
func unstarted(t *testing.T, st *store.Store) []store.Delivery {
	t.Helper()
	ds, err := st.UnstartedDeliveries(context.Background(), 100)
	require.NoError(t, err)
	return ds
}

func TestCreateWebhookShowsASecretOfTwentyFourRandomBytesOnlyOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		st := db.Open(t)
		ctx := context.Background()
		w, err := st.CreateWebhook(ctx, "https://example.com/hook", []string{store.EventEvidenceConfirmed})
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(w.Secret, webhooksign.SecretPrefix))
		raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(w.Secret, webhooksign.SecretPrefix))
		require.NoError(t, err)
		assert.Len(t, raw, 24)

		got, err := st.GetWebhook(ctx, w.ID)
		require.NoError(t, err)
		assert.Empty(t, got.Secret)
		assert.Equal(t, []string{store.EventEvidenceConfirmed}, got.Events)

		rotated, err := st.RotateWebhookSecret(ctx, w.ID, 0)
		require.NoError(t, err)
		assert.NotEqual(t, w.Secret, rotated.Secret)
		_, target, err := deliveryTargetOf(t, st, w.ID)
		require.NoError(t, err)
		assert.Equal(t, []string{rotated.Secret}, target.Secrets, "without a grace period the old secret stops at once")

		require.NoError(t, st.DeleteWebhook(ctx, w.ID))
		_, err = st.GetWebhook(ctx, w.ID)
		assert.ErrorIs(t, err, store.ErrNotFound)
	})
}

// deliveryTargetOf confirms one evidence so the subscription gets a delivery
// and returns it with its target.
func deliveryTargetOf(t *testing.T, st *store.Store, sub string) (store.Delivery, store.Target, error) {
	t.Helper()
	insert(t, st, store.NewEvidence{Digest: digestOf("target " + sub), Chains: []string{"stub"}, Priority: 5})
	confirm(t, st, formOne(t, st, "stub", 10), "0xtarget", 1)
	for _, d := range unstarted(t, st) {
		if d.SubscriptionID == sub {
			return st.DeliveryTarget(context.Background(), d.ID)
		}
	}
	t.Fatalf("no delivery for %s", sub)
	return store.Delivery{}, store.Target{}, nil
}

func TestConfirmingABatchRecordsOneEvidenceConfirmedDeliveryPerSubscribedWebhook(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		st := db.Open(t)
		ctx := context.Background()
		both, err := st.CreateWebhook(ctx, "https://a.example/hook", []string{store.EventEvidenceConfirmed, store.EventEpochFailed})
		require.NoError(t, err)
		other, err := st.CreateWebhook(ctx, "https://b.example/hook", []string{store.EventEvidenceDeadLettered})
		require.NoError(t, err)

		ev := insert(t, st, store.NewEvidence{Digest: digestOf("x"), Chains: []string{"stub"}, Priority: 5})
		assert.Empty(t, unstarted(t, st), "nothing happened yet")
		b := formOne(t, st, "stub", 10)
		confirm(t, st, b, "0xabc", 7)
		// Confirming again is a no-op and announces nothing twice.
		require.NoError(t, st.ConfirmBatch(ctx, b.ID, store.Confirmation{TxRef: "0xabc"}))

		ds := unstarted(t, st)
		require.Len(t, ds, 1)
		d := ds[0]
		assert.Equal(t, both.ID, d.SubscriptionID)
		assert.Equal(t, store.EventEvidenceConfirmed, d.Type)
		assert.Equal(t, ev.ID, d.ObjectID)
		var body struct {
			Type      string
			Timestamp time.Time
			Data      struct {
				ID, Status string
				ExistedBy  time.Time `json:"existed_by"`
				Links      map[string]string
			}
		}
		require.NoError(t, json.Unmarshal(d.Body, &body))
		assert.Equal(t, store.EventEvidenceConfirmed, body.Type)
		assert.Equal(t, ev.ID, body.Data.ID)
		assert.Equal(t, time.UnixMilli(1_700_000_000_000).UTC(), body.Data.ExistedBy, "the evidence existed no later than its anchor's block time")
		assert.Equal(t, "confirmed", body.Data.Status)
		assert.Equal(t, "/v1/evidence/"+ev.ID+"/receipt", body.Data.Links["receipt"])
		assert.NotContains(t, string(d.Body), "whsec_")

		ls, err := st.ListDeliveries(ctx, other.ID, 10)
		require.NoError(t, err)
		assert.Empty(t, ls)
	})
}

func TestDeadLetteringAndFinishingEpochsAndWalletsRecordTheirEvents(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		st := db.Open(t)
		ctx := context.Background()
		_, err := st.CreateWebhook(ctx, "https://a.example/hook", store.EventTypes)
		require.NoError(t, err)

		insert(t, st, store.NewEvidence{Digest: digestOf("dl"), Chains: []string{"stub"}, Priority: 5})
		b := formOne(t, st, "stub", 10)
		require.NoError(t, st.DeadLetterBatch(ctx, b.ID, "gave up"))
		require.NoError(t, st.DeadLetterBatch(ctx, b.ID, "gave up"))

		ep, _, err := st.CreateEpoch(ctx, newEpoch("e1"), 10)
		require.NoError(t, err)
		require.NoError(t, st.FinishEpoch(ctx, ep.ID, ep.Run, store.EpochQuarantined, "conservation"))
		assert.ErrorIs(t, st.FinishEpoch(ctx, ep.ID, ep.Run, store.EpochQuarantined, "again"), store.ErrConflict)

		var types []string
		for _, d := range unstarted(t, st) {
			types = append(types, d.Type)
		}
		assert.Equal(t, []string{store.EventEvidenceDeadLettered, store.EventEpochQuarantined}, types)
	})
}

func TestFailedDeliveriesDisableTheWebhookAfterTheConfiguredTimeAndARetryReDrivesIt(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		st := db.Open(t)
		ctx := context.Background()
		w, err := st.CreateWebhook(ctx, "https://a.example/hook", []string{store.EventEvidenceConfirmed})
		require.NoError(t, err)
		d, _, err := deliveryTargetOf(t, st, w.ID)
		require.NoError(t, err)
		require.NoError(t, st.MarkDeliveryStarted(ctx, d.ID, 0))
		assert.Empty(t, unstarted(t, st))

		start := time.Now()
		fail := store.Attempt{Status: 500, Error: "answered 500", At: start, DisableAfter: time.Hour}
		disabled, err := st.RecordDeliveryAttempt(ctx, d.ID, 0, fail)
		require.NoError(t, err)
		assert.False(t, disabled)
		fail.At = start.Add(2 * time.Hour)
		disabled, err = st.RecordDeliveryAttempt(ctx, d.ID, 0, fail)
		require.NoError(t, err)
		assert.True(t, disabled)
		got, err := st.GetWebhook(ctx, w.ID)
		require.NoError(t, err)
		assert.True(t, got.Disabled)
		_, target, err := st.DeliveryTarget(ctx, d.ID)
		require.NoError(t, err)
		assert.False(t, target.Live)

		_, err = st.RetryDelivery(ctx, w.ID, d.ID)
		assert.ErrorIs(t, err, store.ErrConflict, "a pending delivery is not re-driven")
		require.NoError(t, st.FailDelivery(ctx, d.ID, 0, "webhook disabled"))
		again, err := st.RetryDelivery(ctx, w.ID, d.ID)
		require.NoError(t, err)
		assert.Equal(t, store.DeliveryPending, again.Status)
		assert.Equal(t, 1, again.Run)
		assert.Equal(t, 2, again.Attempts)
		got, err = st.GetWebhook(ctx, w.ID)
		require.NoError(t, err)
		assert.False(t, got.Disabled, "a re-drive enables the webhook again")
		require.Len(t, unstarted(t, st), 1)

		// A late attempt of the old run changes nothing.
		_, err = st.RecordDeliveryAttempt(ctx, d.ID, 0, store.Attempt{OK: true, Status: 200, At: time.Now()})
		require.NoError(t, err)
		_, err = st.RecordDeliveryAttempt(ctx, d.ID, 1, store.Attempt{OK: true, Status: 204, At: time.Now()})
		require.NoError(t, err)
		done, err := st.GetDelivery(ctx, d.ID)
		require.NoError(t, err)
		assert.Equal(t, store.DeliveryDelivered, done.Status)
		assert.Equal(t, 204, done.LastStatus)
	})
}

func TestAWalletItemCompletedOrAbandonedIsAnnouncedOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		st := db.Open(t)
		ctx := context.Background()
		_, err := st.CreateWebhook(ctx, "https://a.example/hook", []string{store.EventWalletCompleted, store.EventWalletAbandoned})
		require.NoError(t, err)
		_, _, err = st.AddWallet(ctx, walletA, bothNetworks)
		require.NoError(t, err)

		_, err = st.BeginScan(ctx, walletA, "etherlink")
		require.NoError(t, err)
		require.NoError(t, st.CompleteScan(ctx, walletA, "etherlink", store.Holdings{}))
		require.NoError(t, st.CompleteScan(ctx, walletA, "etherlink", store.Holdings{}), "a retried completion")

		_, err = st.BeginScan(ctx, walletA, "solana")
		require.NoError(t, err)
		fail := store.ScanFailure{Error: "rpc down", Now: time.Now(), MaxRetries: 1, Delay: func(int) time.Duration { return time.Second }}
		for range 3 {
			_, _, err := st.FailScan(ctx, walletA, "solana", fail)
			require.NoError(t, err)
		}

		var got []string
		for _, d := range unstarted(t, st) {
			got = append(got, d.Type+" "+d.ObjectID)
		}
		assert.Equal(t, []string{store.EventWalletCompleted + " " + walletA + "/etherlink", store.EventWalletAbandoned + " " + walletA + "/solana"}, got)
	})
}

func TestARotatedOutSecretSignsBesideTheNewOneUntilItsGraceEndsThenIsForgotten(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		st := db.Open(t)
		ctx := context.Background()
		w, err := st.CreateWebhook(ctx, "https://a.example/hook", []string{store.EventEvidenceConfirmed})
		require.NoError(t, err)
		d, _, err := deliveryTargetOf(t, st, w.ID)
		require.NoError(t, err)

		before := time.Now()
		second, err := st.RotateWebhookSecret(ctx, w.ID, time.Hour)
		require.NoError(t, err)
		assert.WithinRange(t, second.PreviousSecretUntil, before.Truncate(time.Millisecond).Add(time.Hour), time.Now().Add(time.Hour), "an hour from the rotation")
		_, target, err := st.DeliveryTarget(ctx, d.ID)
		require.NoError(t, err)
		assert.Equal(t, []string{second.Secret, w.Secret}, target.Secrets, "the new secret first, then the old")
		got, err := st.GetWebhook(ctx, w.ID)
		require.NoError(t, err)
		assert.Empty(t, got.Secret, "neither secret is shown")
		assert.Equal(t, second.PreviousSecretUntil.UnixMilli(), got.PreviousSecretUntil.UnixMilli())

		// Rotating again during the grace period: only the secret just
		// replaced signs beside the new one; the first stops.
		third, err := st.RotateWebhookSecret(ctx, w.ID, time.Second)
		require.NoError(t, err)
		_, target, err = st.DeliveryTarget(ctx, d.ID)
		require.NoError(t, err)
		assert.Equal(t, []string{third.Secret, second.Secret}, target.Secrets)

		require.Eventually(t, func() bool {
			_, target, err = st.DeliveryTarget(ctx, d.ID)
			return err == nil && len(target.Secrets) == 1
		}, 10*time.Second, 20*time.Millisecond, "after the grace period only the new secret signs")
		assert.Equal(t, []string{third.Secret}, target.Secrets)
		assert.False(t, time.Now().Before(third.PreviousSecretUntil), "not before the grace ended")
		got, err = st.GetWebhook(ctx, w.ID)
		require.NoError(t, err)
		assert.True(t, got.PreviousSecretUntil.IsZero())
		prev, err := store.PreviousSecret(ctx, st, w.ID)
		require.NoError(t, err)
		assert.Empty(t, prev, "the old secret is not kept past its grace")

		_, err = st.RotateWebhookSecret(ctx, "wh_000000000000000000000000", time.Hour)
		assert.ErrorIs(t, err, store.ErrNotFound)
	})
}

func TestA410DisablesTheWebhookAtOnceWithItsReasonAndEnableWebhookEnablesIt(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		st := db.Open(t)
		ctx := context.Background()
		w, err := st.CreateWebhook(ctx, "https://a.example/hook", []string{store.EventEvidenceConfirmed})
		require.NoError(t, err)
		d, _, err := deliveryTargetOf(t, st, w.ID)
		require.NoError(t, err)

		// DisableAfter 0 (never for failures): a 410 disables all the same.
		disabled, err := st.RecordDeliveryAttempt(ctx, d.ID, 0, store.Attempt{Status: 410, Error: "answered 410", At: time.Now(), Gone: true})
		require.NoError(t, err)
		assert.True(t, disabled)
		got, err := st.GetWebhook(ctx, w.ID)
		require.NoError(t, err)
		assert.True(t, got.Disabled)
		assert.Equal(t, store.GoneReason, got.DisabledReason)
		_, target, err := st.DeliveryTarget(ctx, d.ID)
		require.NoError(t, err)
		assert.False(t, target.Live)
		disabled, err = st.RecordDeliveryAttempt(ctx, d.ID, 0, store.Attempt{Status: 410, Error: "answered 410", At: time.Now(), Gone: true})
		require.NoError(t, err)
		assert.False(t, disabled, "disabled once, not again")

		enabled, err := st.EnableWebhook(ctx, w.ID)
		require.NoError(t, err)
		assert.False(t, enabled.Disabled)
		assert.Empty(t, enabled.DisabledReason)
		assert.True(t, enabled.FailingSince.IsZero(), "the failing streak starts over")
		_, target, err = st.DeliveryTarget(ctx, d.ID)
		require.NoError(t, err)
		assert.True(t, target.Live)
		_, err = st.EnableWebhook(ctx, "wh_000000000000000000000000")
		assert.ErrorIs(t, err, store.ErrNotFound)
	})
}

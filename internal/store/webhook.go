package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/keeperhq/keeper/internal/webhooksign"
)

// Webhooks owns webhook subscriptions (webhook_subscriptions) and their
// deliveries (webhook_deliveries). Deliveries are written by the other parts
// in the transaction of the state change they report (insertDeliveries);
// Webhooks hands them to the delivery workflows and records the outcome.
type Webhooks struct{ *db }

// Webhook event types (docs/webhooks.md).
const (
	EventEvidenceConfirmed    = "evidence.confirmed"
	EventEvidenceDeadLettered = "evidence.dead_lettered"
	EventEpochCompleted       = "epoch.completed"
	EventEpochQuarantined     = "epoch.quarantined"
	EventEpochFailed          = "epoch.failed"
	EventWalletCompleted      = "wallet.completed"
	EventWalletAbandoned      = "wallet.abandoned"
)

// EventTypes lists every event a subscription may name.
var EventTypes = []string{
	EventEvidenceConfirmed, EventEvidenceDeadLettered,
	EventEpochCompleted, EventEpochQuarantined, EventEpochFailed,
	EventWalletCompleted, EventWalletAbandoned,
}

// Delivery states.
const (
	DeliveryPending   = "pending"   // waiting to be sent, or between attempts
	DeliveryDelivered = "delivered" // the endpoint answered 2xx
	DeliveryFailed    = "failed"    // retries used up, or the subscription disabled or deleted; re-drivable
)

// Webhook is one subscription. Secret is set only where it is shown to the
// caller: on creation and rotation, and for the delivery activity.
type Webhook struct {
	ID             string
	URL            string
	Events         []string
	Secret         string
	Disabled       bool
	DisabledAt     time.Time
	DisabledReason string
	FailingSince   time.Time // zero while the last delivery succeeded
	CreatedAt      time.Time
	UpdatedAt      time.Time

	// PreviousSecretUntil is when the secret replaced by the last rotation
	// stops signing beside the current one; zero when none does.
	PreviousSecretUntil time.Time
}

// Delivery is one event sent to one subscription. Its ID is the
// webhook-id header: stable across attempts and re-drives.
type Delivery struct {
	ID             string
	SubscriptionID string
	Type           string
	ObjectID       string
	Body           []byte // the exact bytes signed and sent
	Status         string
	Attempts       int
	LastError      string
	LastStatus     int // HTTP status of the last answer, 0 when none
	Run            int // bumped by each re-drive: the workflow of run n delivers it
	CreatedAt      time.Time
	UpdatedAt      time.Time
	DeliveredAt    time.Time
}

// newSecret returns "whsec_" + base64 of 24 random bytes.
func newSecret() string {
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return webhooksign.SecretPrefix + base64.StdEncoding.EncodeToString(b[:])
}

func joinEvents(events []string) string { return "," + strings.Join(events, ",") + "," }

func splitEvents(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' })
}

const webhookCols = `id, url, events, disabled_at, disabled_reason, failing_since, created_at, updated_at, previous_secret_until`

func scanWebhook(row interface{ Scan(...any) error }) (Webhook, error) {
	var (
		w                                            Webhook
		events                                       string
		disabled, failing, created, updatedAt, until int64
	)
	err := row.Scan(&w.ID, &w.URL, &events, &disabled, &w.DisabledReason, &failing, &created, &updatedAt, &until)
	if errors.Is(err, sql.ErrNoRows) {
		return Webhook{}, ErrNotFound
	}
	if err != nil {
		return Webhook{}, err
	}
	w.Events = splitEvents(events)
	w.Disabled = disabled != 0
	w.DisabledAt = fromMS(disabled)
	w.FailingSince = fromMS(failing)
	w.CreatedAt, w.UpdatedAt = fromMS(created), fromMS(updatedAt)
	if until > ms(time.Now()) {
		w.PreviousSecretUntil = fromMS(until)
	}
	return w, nil
}

// CreateWebhook stores a subscription with a new secret, returned once here.
// url and events are taken as checked by the caller.
func (s Webhooks) CreateWebhook(ctx context.Context, url string, events []string) (Webhook, error) {
	id, secret, now := newID("wh_"), newSecret(), ms(time.Now())
	err := s.exec(ctx, `INSERT INTO webhook_subscriptions (id, url, events, secret, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)`,
		id, url, joinEvents(events), secret, now, now)
	if err != nil {
		return Webhook{}, fmt.Errorf("store: create webhook: %w", err)
	}
	w, err := s.GetWebhook(ctx, id)
	w.Secret = secret
	return w, err
}

// GetWebhook returns a subscription (without its secret) or ErrNotFound.
func (s Webhooks) GetWebhook(ctx context.Context, id string) (Webhook, error) {
	w, err := scanWebhook(s.w.QueryRowContext(ctx, `SELECT `+webhookCols+` FROM webhook_subscriptions WHERE id = ? AND deleted_at = 0`, id))
	if err != nil {
		return Webhook{}, fmt.Errorf("webhook %s: %w", id, err)
	}
	return w, nil
}

// ListWebhooks returns the subscriptions, oldest first, without secrets.
func (s Webhooks) ListWebhooks(ctx context.Context) ([]Webhook, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+webhookCols+` FROM webhook_subscriptions WHERE deleted_at = 0 ORDER BY created_at, id`)
	if err != nil {
		return nil, fmt.Errorf("store: list webhooks: %w", err)
	}
	defer rows.Close()
	out := []Webhook{}
	for rows.Next() {
		w, err := scanWebhook(rows)
		if err != nil {
			return nil, fmt.Errorf("store: list webhooks: %w", err)
		}
		out = append(out, w)
	}
	return out, rows.Err()
}

// DeleteWebhook removes a subscription: no new deliveries are recorded for
// it, and its pending ones fail at their next attempt.
func (s Webhooks) DeleteWebhook(ctx context.Context, id string) error {
	now := ms(time.Now())
	res, err := s.w.ExecContext(ctx, `UPDATE webhook_subscriptions SET deleted_at = ?, updated_at = ? WHERE id = ? AND deleted_at = 0`, now, now, id)
	if err != nil {
		return fmt.Errorf("store: delete webhook %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("webhook %s: %w", id, ErrNotFound)
	}
	return nil
}

// RotateWebhookSecret replaces a subscription's secret with a new one,
// returned once here; deliveries signed from now on use it. For grace
// after now, the secret it replaces keeps signing beside it (receivers
// that still hold the old one go on verifying while they are redeployed);
// a secret replaced by an earlier rotation stops signing at once. grace 0
// replaces the secret outright. The old secret is never returned.
func (s Webhooks) RotateWebhookSecret(ctx context.Context, id string, grace time.Duration) (Webhook, error) {
	secret, now := newSecret(), ms(time.Now())
	// previous_secret is assigned the row's secret before this update
	// (SQL's SET reads the old row), on SQLite and PostgreSQL alike.
	prev, until := `secret`, now+grace.Milliseconds()
	if grace <= 0 {
		prev, until = `''`, 0
	}
	res, err := s.w.ExecContext(ctx, `UPDATE webhook_subscriptions SET previous_secret = `+prev+`, previous_secret_until = ?, secret = ?, updated_at = ?
		WHERE id = ? AND deleted_at = 0`, until, secret, now, id)
	if err != nil {
		return Webhook{}, fmt.Errorf("store: rotate secret of webhook %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return Webhook{}, fmt.Errorf("webhook %s: %w", id, ErrNotFound)
	}
	w, err := s.GetWebhook(ctx, id)
	w.Secret = secret
	return w, err
}

// EventData is the "data" of an event's body.
type EventData struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	// ExistedBy, for evidence.confirmed, is the earliest block time of the
	// evidence's anchors: the bound its receipt proves (docs/receipts.md).
	ExistedBy time.Time         `json:"existed_by,omitzero"`
	Links     map[string]string `json:"links,omitempty"`
}

type eventBody struct {
	Type      string    `json:"type"`
	Timestamp string    `json:"timestamp"`
	Data      EventData `json:"data"`
}

// recordEvent writes one delivery per live subscription to typ, inside the
// transaction of the state change it reports, so the change and its
// announcement commit together or not at all.
func recordEvent(ctx context.Context, tx *txn, typ string, data EventData) error {
	subs, err := subscribers(ctx, tx, typ)
	if err != nil {
		return err
	}
	return insertDeliveries(ctx, tx, subs, typ, data)
}

// subscribers returns the enabled subscriptions to typ.
func subscribers(ctx context.Context, tx *txn, typ string) ([]string, error) {
	rows, err := tx.QueryContext(ctx, `SELECT id FROM webhook_subscriptions WHERE deleted_at = 0 AND disabled_at = 0 AND events LIKE ?`, "%,"+typ+",%")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var subs []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		subs = append(subs, id)
	}
	return subs, rows.Err()
}

// insertDeliveries writes the event's delivery to each of subs.
func insertDeliveries(ctx context.Context, tx *txn, subs []string, typ string, data EventData) error {
	if len(subs) == 0 {
		return nil
	}
	now := time.Now().UTC()
	body, err := json.Marshal(eventBody{Type: typ, Timestamp: now.Format(time.RFC3339Nano), Data: data})
	if err != nil {
		return err
	}
	for _, sub := range subs {
		if _, err := tx.ExecContext(ctx, `INSERT INTO webhook_deliveries (id, subscription_id, type, object_id, body, status, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, newID("msg_"), sub, typ, data.ID, string(body), DeliveryPending, ms(now), ms(now)); err != nil {
			return err
		}
	}
	return nil
}

// evidenceEvents records typ, for subs, for each evidence of the batch
// whose status became state (confirmed or dead_letter) when the batch did:
// confirmed once no other of its anchors is unconfirmed, dead-lettered when
// none of its other anchors was dead-lettered already.
func evidenceEvents(ctx context.Context, tx *txn, subs []string, batchID int64, state, typ string) error {
	other := `a2.batch_id IS NULL OR b2.state <> '` + BatchConfirmed + `'`
	if state == BatchDeadLetter {
		other = `b2.state = '` + BatchDeadLetter + `'`
	}
	// An anchor with neither an outbox row nor a span waits on its lane:
	// not confirmed, not dead-lettered.
	complete := ``
	if state == BatchConfirmed {
		complete = ` AND (SELECT COUNT(*) FROM ` + anchorsOf + ` a3) = ` + chainCount
	}
	// The earliest block time of the evidence's anchors (0: the store's
	// "unknown"); read for a confirmed evidence, whose batches are all
	// confirmed by now.
	rows, err := tx.QueryContext(ctx, `SELECT e.id, COALESCE((SELECT MIN(b4.block_time) FROM `+anchorsOf+` a4 JOIN batches b4 ON b4.id = a4.batch_id
			WHERE b4.block_time > 0), 0)
		FROM `+batchMembers("?1")+` m JOIN evidence e ON e.seq = m.seq JOIN batches b0 ON b0.id = ?1
		WHERE NOT EXISTS (SELECT 1 FROM `+anchorsOf+` a2 LEFT JOIN batches b2 ON b2.id = a2.batch_id
			WHERE a2.chain <> b0.chain AND (`+other+`))`+complete+`
		ORDER BY e.seq`, batchID)
	if err != nil {
		return err
	}
	var ids []string
	existedBy := map[string]int64{}
	for rows.Next() {
		var (
			id string
			bt int64
		)
		if err := rows.Scan(&id, &bt); err != nil {
			rows.Close()
			return err
		}
		ids, existedBy[id] = append(ids, id), bt
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, id := range ids {
		data := EventData{ID: id, Status: state}
		if typ == EventEvidenceConfirmed {
			if bt := existedBy[id]; bt > 0 {
				data.ExistedBy = fromMS(bt).UTC()
			}
			data.Links = map[string]string{"receipt": "/v1/evidence/" + id + "/receipt", "evidence": "/v1/evidence/" + id}
		} else {
			data.Links = map[string]string{"evidence": "/v1/evidence/" + id}
		}
		if err := insertDeliveries(ctx, tx, subs, typ, data); err != nil {
			return err
		}
	}
	return nil
}

const deliveryCols = `id, subscription_id, type, object_id, body, status, attempts, last_error, last_status, run, created_at, updated_at, delivered_at`

func scanDelivery(row interface{ Scan(...any) error }) (Delivery, error) {
	var (
		d                           Delivery
		body                        string
		created, updated, delivered int64
	)
	err := row.Scan(&d.ID, &d.SubscriptionID, &d.Type, &d.ObjectID, &body, &d.Status, &d.Attempts, &d.LastError, &d.LastStatus, &d.Run, &created, &updated, &delivered)
	if errors.Is(err, sql.ErrNoRows) {
		return Delivery{}, ErrNotFound
	}
	if err != nil {
		return Delivery{}, err
	}
	d.Body = []byte(body)
	d.CreatedAt, d.UpdatedAt, d.DeliveredAt = fromMS(created), fromMS(updated), fromMS(delivered)
	return d, nil
}

func (s Webhooks) deliveries(ctx context.Context, q querier, where string, args ...any) ([]Delivery, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+deliveryCols+` FROM webhook_deliveries WHERE `+where, args...)
	if err != nil {
		return nil, fmt.Errorf("store: webhook deliveries: %w", err)
	}
	defer rows.Close()
	out := []Delivery{}
	for rows.Next() {
		d, err := scanDelivery(rows)
		if err != nil {
			return nil, fmt.Errorf("store: webhook deliveries: %w", err)
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// GetDelivery returns one delivery or ErrNotFound.
func (s Webhooks) GetDelivery(ctx context.Context, id string) (Delivery, error) {
	d, err := scanDelivery(s.w.QueryRowContext(ctx, `SELECT `+deliveryCols+` FROM webhook_deliveries WHERE id = ?`, id))
	if err != nil {
		return Delivery{}, fmt.Errorf("webhook delivery %s: %w", id, err)
	}
	return d, nil
}

// ListDeliveries returns a subscription's deliveries, newest first, at most
// limit.
func (s Webhooks) ListDeliveries(ctx context.Context, subscriptionID string, limit int) ([]Delivery, error) {
	if _, err := s.GetWebhook(ctx, subscriptionID); err != nil {
		return nil, err
	}
	return s.deliveries(ctx, s.r, `subscription_id = ? ORDER BY seq DESC LIMIT ?`, subscriptionID, limit)
}

// UnstartedDeliveries returns pending deliveries no workflow was started
// for yet, oldest first.
func (s Webhooks) UnstartedDeliveries(ctx context.Context, limit int) ([]Delivery, error) {
	return s.deliveries(ctx, s.w, `started_at = 0 AND status = ? ORDER BY seq LIMIT ?`, DeliveryPending, limit)
}

// MarkDeliveryStarted records that the workflow delivering run of the
// delivery has been started.
func (s Webhooks) MarkDeliveryStarted(ctx context.Context, id string, run int) error {
	return s.exec(ctx, `UPDATE webhook_deliveries SET started_at = ? WHERE id = ? AND run = ?`, ms(time.Now()), id, run)
}

// EnableWebhook enables a subscription disabled by failures or by a 410
// answer, and clears its failing streak: events are recorded for it again.
// Its failed deliveries stay failed until re-driven one by one. Enabling an
// enabled subscription changes nothing.
func (s Webhooks) EnableWebhook(ctx context.Context, id string) (Webhook, error) {
	_, err := s.w.ExecContext(ctx, `UPDATE webhook_subscriptions SET disabled_at = 0, disabled_reason = '', failing_since = 0, updated_at = ?
		WHERE id = ? AND deleted_at = 0 AND disabled_at <> 0`, ms(time.Now()), id)
	if err != nil {
		return Webhook{}, fmt.Errorf("store: enable webhook %s: %w", id, err)
	}
	return s.GetWebhook(ctx, id)
}

// Target is what sending a delivery needs: its subscription's URL, the
// secrets to sign with, and whether the subscription still takes
// deliveries.
type Target struct {
	URL string
	// Secrets sign every post: the current secret first, then, during a
	// rotation's grace period, the one it replaced.
	Secrets []string
	Live    bool // false: deleted or disabled
}

// DeliveryTarget returns the delivery and where and how to send it.
func (s Webhooks) DeliveryTarget(ctx context.Context, id string) (Delivery, Target, error) {
	d, err := s.GetDelivery(ctx, id)
	if err != nil {
		return Delivery{}, Target{}, err
	}
	var (
		t                        Target
		secret, prev             string
		disabled, deleted, until int64
	)
	err = s.w.QueryRowContext(ctx, `SELECT url, secret, previous_secret, previous_secret_until, disabled_at, deleted_at FROM webhook_subscriptions WHERE id = ?`, d.SubscriptionID).
		Scan(&t.URL, &secret, &prev, &until, &disabled, &deleted)
	if err != nil {
		return Delivery{}, Target{}, fmt.Errorf("store: webhook of delivery %s: %w", id, err)
	}
	t.Secrets = []string{secret}
	switch now := ms(time.Now()); {
	case prev != "" && until > now:
		t.Secrets = append(t.Secrets, prev)
	case prev != "":
		// The grace period is over: the old secret is not kept any longer.
		if err := s.exec(ctx, `UPDATE webhook_subscriptions SET previous_secret = '', previous_secret_until = 0
			WHERE id = ? AND previous_secret_until <= ?`, d.SubscriptionID, now); err != nil {
			return Delivery{}, Target{}, err
		}
	}
	t.Live = disabled == 0 && deleted == 0
	return d, t, nil
}

// Attempt is the outcome of one delivery attempt.
type Attempt struct {
	OK     bool
	Status int    // HTTP status, 0 when there was no answer
	Error  string // what failed; never the answer's body
	At     time.Time
	// DisableAfter disables the subscription when its deliveries have
	// failed without a success for this long (0: never).
	DisableAfter time.Duration
	// Gone disables the subscription at once: its endpoint answered 410
	// Gone, the receiver's way of saying it wants no more posts.
	Gone bool
}

// GoneReason is a subscription's disabled_reason after its endpoint
// answered 410 Gone.
const GoneReason = "the endpoint answered 410 Gone"

// RecordDeliveryAttempt records one attempt of run of the delivery. A
// success clears the subscription's failing streak; a failure starts it, and
// disables the subscription once it is older than DisableAfter. disabled
// reports that this attempt disabled it. An attempt of a run re-driven since
// is ignored.
func (s Webhooks) RecordDeliveryAttempt(ctx context.Context, id string, run int, a Attempt) (disabled bool, err error) {
	err = s.tx(ctx, func(tx *txn) error {
		var sub string
		if err := tx.QueryRowContext(ctx, `SELECT subscription_id FROM webhook_deliveries WHERE id = ? AND run = ?`, id, run).Scan(&sub); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return nil
			}
			return err
		}
		now := ms(a.At)
		if a.OK {
			if _, err := tx.ExecContext(ctx, `UPDATE webhook_deliveries SET status = ?, attempts = attempts + 1, last_error = '', last_status = ?, delivered_at = ?, updated_at = ?
				WHERE id = ? AND run = ?`, DeliveryDelivered, a.Status, now, now, id, run); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, `UPDATE webhook_subscriptions SET failing_since = 0 WHERE id = ?`, sub)
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE webhook_deliveries SET attempts = attempts + 1, last_error = ?, last_status = ?, updated_at = ?
			WHERE id = ? AND run = ?`, a.Error, a.Status, now, id, run); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE webhook_subscriptions SET failing_since = ? WHERE id = ? AND failing_since = 0`, now, sub); err != nil {
			return err
		}
		var (
			res sql.Result
			err error
		)
		switch {
		case a.Gone:
			res, err = tx.ExecContext(ctx, `UPDATE webhook_subscriptions SET disabled_at = ?, updated_at = ?, disabled_reason = ?
				WHERE id = ? AND disabled_at = 0`, now, now, GoneReason, sub)
		case a.DisableAfter > 0:
			res, err = tx.ExecContext(ctx, `UPDATE webhook_subscriptions SET disabled_at = ?, updated_at = ?, disabled_reason = ?
				WHERE id = ? AND disabled_at = 0 AND failing_since > 0 AND failing_since <= ?`,
				now, now, fmt.Sprintf("deliveries failed for %s without a success", a.DisableAfter), sub, now-a.DisableAfter.Milliseconds())
		default:
			return nil
		}
		if err != nil {
			return err
		}
		n, _ := res.RowsAffected()
		disabled = n > 0
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("store: record attempt of webhook delivery %s: %w", id, err)
	}
	return disabled, nil
}

// FailDelivery marks run of the delivery failed with why: its retries are
// used up or its subscription no longer takes deliveries.
func (s Webhooks) FailDelivery(ctx context.Context, id string, run int, why string) error {
	return s.exec(ctx, `UPDATE webhook_deliveries SET status = ?, updated_at = ?,
		last_error = CASE WHEN last_error = '' THEN ? ELSE ? || '; last attempt: ' || last_error END
		WHERE id = ? AND run = ? AND status = ?`,
		DeliveryFailed, ms(time.Now()), why, why, id, run, DeliveryPending)
}

// RetryDelivery re-drives a failed delivery of a subscription: it goes back
// to pending, under a new run, with the same id and body. A disabled
// subscription is enabled again (the caller says the endpoint is back).
// It returns ErrNotFound for an unknown pair and ErrConflict for a delivery
// that is not failed.
func (s Webhooks) RetryDelivery(ctx context.Context, subscriptionID, id string) (Delivery, error) {
	err := s.tx(ctx, func(tx *txn) error {
		var status string
		err := tx.QueryRowContext(ctx, `SELECT d.status FROM webhook_deliveries d JOIN webhook_subscriptions w ON w.id = d.subscription_id
			WHERE d.id = ? AND d.subscription_id = ? AND w.deleted_at = 0`, id, subscriptionID).Scan(&status)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("webhook delivery %s: %w", id, ErrNotFound)
		}
		if err != nil {
			return err
		}
		if status != DeliveryFailed {
			return fmt.Errorf("webhook delivery %s is %s, not failed: %w", id, status, ErrConflict)
		}
		now := ms(time.Now())
		if _, err := tx.ExecContext(ctx, `UPDATE webhook_deliveries SET status = ?, run = run + 1, started_at = 0, updated_at = ? WHERE id = ?`,
			DeliveryPending, now, id); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE webhook_subscriptions SET disabled_at = 0, disabled_reason = '', failing_since = 0, updated_at = ?
			WHERE id = ? AND disabled_at <> 0`, now, subscriptionID)
		return err
	})
	if err != nil {
		if errors.Is(err, ErrNotFound) || errors.Is(err, ErrConflict) {
			return Delivery{}, err
		}
		return Delivery{}, fmt.Errorf("store: retry webhook delivery %s: %w", id, err)
	}
	return s.GetDelivery(ctx, id)
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"time"

	"github.com/keeperhq/keeper/internal/node"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/workflows"
)

// webhookScenarios are recorded DeliverWebhook runs: one delivered after
// two failed posts (the second answered 503 with Retry-After); one failed
// once its retries were used up; one whose endpoint answered 410 Gone.
var webhookScenarios = []struct {
	name      string
	failFirst int // posts answered 500 (the second 503 with Retry-After: 1) before a 204 (-1: every post)
	gone      bool
	status    string
}{
	{"deliver_webhook_delivered_after_retries", 2, false, store.DeliveryDelivered},
	{"deliver_webhook_failed", -1, false, store.DeliveryFailed},
	{"deliver_webhook_gone", 0, true, store.DeliveryFailed},
}

// The webhook scenarios are recorded as files webhookFirst… with today's
// DeliverWebhook, whose SendWebhook takes the delivery's schedule and sets
// each wait itself (jitter, Retry-After, 410). Files 13 and 14 hold the
// first two scenarios as recorded before that: deliveries a keeper of that
// time started still replay on them, so they are kept as recorded and never
// written again.
const webhookFirst = 19

func recordWebhooks(ctx context.Context, node *node.Node, outDir string, first int) error {
	for i, sc := range webhookScenarios {
		var mu sync.Mutex
		posts := 0
		recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			mu.Lock()
			defer mu.Unlock()
			posts++
			switch {
			case sc.gone:
				w.WriteHeader(http.StatusGone)
				return
			case posts == 2 && sc.failFirst >= 2:
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			case sc.failFirst < 0 || posts <= sc.failFirst:
				w.WriteHeader(http.StatusInternalServerError)
				return
			}
			w.WriteHeader(http.StatusNoContent)
		}))
		err := recordWebhook(ctx, node, recv.URL, outDir, first+i, sc.name, sc.status)
		recv.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", sc.name, err)
		}
	}
	return nil
}

// recordWebhook subscribes url to evidence.confirmed, posts one evidence and
// records the history of its delivery's workflow.
func recordWebhook(ctx context.Context, node *node.Node, url, outDir string, n int, name, want string) error {
	body, _ := json.Marshal(map[string]any{"url": url, "events": []string{store.EventEvidenceConfirmed}})
	resp, err := http.Post("http://"+node.APIAddr()+"/v1/webhooks", "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	var sub struct{ ID string }
	err = json.NewDecoder(resp.Body).Decode(&sub)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("subscribe: status %d: %v", resp.StatusCode, err)
	}
	defer node.Store.DeleteWebhook(ctx, sub.ID)
	id, err := postEvidence(node.APIAddr(), name)
	if err != nil {
		return err
	}
	if _, err := waitSettled(ctx, node.Store, id); err != nil {
		return err
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		ds, err := node.Store.ListDeliveries(ctx, sub.ID, 1)
		if err != nil {
			return err
		}
		if len(ds) == 1 && ds[0].Status == want {
			wid := workflows.WebhookWorkflowID(workflows.DeliveryRef{DeliveryID: ds[0].ID, Run: ds[0].Run})
			if err := waitClosed(ctx, node.Client, wid); err != nil {
				return err
			}
			path := filepath.Join(outDir, fmt.Sprintf("%02d_%s.json", n, name))
			if err := writeHistory(ctx, node.Client, wid, path); err != nil {
				return err
			}
			fmt.Printf("%s: workflow %s ended %s after %d attempts -> %s\n", name, wid, want, ds[0].Attempts, path)
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("delivery not %s within a minute: %+v", want, ds)
		}
	}
}

package testsuite

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/app"
	"github.com/keeperhq/keeper/store"
	"github.com/keeperhq/keeper/webhook"
)

// killingReceiver is a webhook endpoint whose first post never gets an
// answer: it calls onFirst (which kills the worker delivering it) and holds
// the post until keeper gives up on it. Every later post gets 204.
type killingReceiver struct {
	onFirst func()

	mu    sync.Mutex
	first bool
	ok    map[string]int    // 204s per webhook-id
	types map[string]string // event type per webhook-id
}

func (r *killingReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	id := req.Header.Get(webhook.HeaderID)
	r.mu.Lock()
	if !r.first {
		r.first = true
		r.mu.Unlock()
		go r.onFirst()
		<-req.Context().Done()
		return
	}
	defer r.mu.Unlock()
	var ev struct{ Type string }
	_ = json.Unmarshal(body, &ev)
	r.types[id] = ev.Type
	r.ok[id]++
	w.WriteHeader(http.StatusNoContent)
}

func TestWebhookWorkerKilledMidDeliveryLosesNothing(t *testing.T) {
	dir := tempDir(t)
	srv := startServer(t, dir)
	cfg := testConfig(dir)
	cfg.Webhook.RetryBase = 100 * time.Millisecond
	cfg.Webhook.RetryCap = 500 * time.Millisecond
	cfg.Webhook.Timeout = time.Second // the killed attempt is made again 2 s on
	st := openStore(t, dir)
	_, chs := stubChains(cfg)
	api := startNode(t, srv, cfg, app.Roles{API: true}, st, chs)
	w1 := startNode(t, srv, cfg, app.Roles{Worker: true}, st, chs)

	recv := &killingReceiver{ok: map[string]int{}, types: map[string]string{}}
	killed := make(chan struct{})
	recv.onFirst = func() {
		w1.Kill()
		startNode(t, srv, cfg, app.Roles{Worker: true}, st, chs)
		close(killed)
	}
	hook := httptest.NewServer(recv)
	defer hook.Close()

	hc := &http.Client{Timeout: 10 * time.Second}
	sub, _ := json.Marshal(map[string]any{"url": hook.URL + "/keeper", "events": []string{store.EventEvidenceConfirmed}})
	resp, err := hc.Post("http://"+api.APIAddr()+"/v1/webhooks", "application/json", bytes.NewReader(sub))
	require.NoError(t, err)
	var created struct{ ID, Secret string }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&created))
	resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode)

	ids := postMany(t, api.APIAddr(), t.Name(), 20, nil)
	waitConfirmed(t, st, len(ids), time.Minute)
	select {
	case <-killed:
	case <-time.After(30 * time.Second):
		t.Fatal("no delivery reached the receiver")
	}

	ctx := context.Background()
	require.Eventually(t, func() bool {
		ds, err := st.ListDeliveries(ctx, created.ID, 100)
		if err != nil || len(ds) != len(ids) {
			return false
		}
		for _, d := range ds {
			if d.Status != store.DeliveryDelivered {
				return false
			}
		}
		return true
	}, 45*time.Second, 100*time.Millisecond, "every confirmation is delivered")

	recv.mu.Lock()
	defer recv.mu.Unlock()
	ds, err := st.ListDeliveries(ctx, created.ID, 100)
	require.NoError(t, err)
	objects := map[string]bool{}
	for _, d := range ds {
		assert.Equal(t, 1, recv.ok[d.ID], "delivery %s answered 2xx once", d.ID)
		assert.Equal(t, store.EventEvidenceConfirmed, recv.types[d.ID])
		objects[d.ObjectID] = true
	}
	for _, id := range ids {
		assert.True(t, objects[id], "evidence %s announced", id)
	}
	assert.Len(t, recv.ok, len(ids), "no delivery beyond one per evidence")
}

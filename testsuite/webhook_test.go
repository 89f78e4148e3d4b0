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
	"go.temporal.io/api/enums/v1"

	"github.com/keeperhq/keeper/internal/node"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/webhooksign"
	"github.com/keeperhq/keeper/internal/workflows"
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
	id := req.Header.Get(webhooksign.HeaderID)
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
	endToEnd(t)
	dir := tempDir(t)
	srv := startServer(t, dir)
	cfg := testConfig(dir)
	cfg.Webhook.RetryBase = 100 * time.Millisecond
	cfg.Webhook.RetryCap = 500 * time.Millisecond
	cfg.Webhook.Timeout = time.Second // the killed attempt is made again 2 s on
	st := openStore(t, dir)
	_, chs := stubChains(cfg)
	api := startNode(t, srv, cfg, node.Roles{API: true}, st, chs)
	w1 := startNode(t, srv, cfg, node.Roles{Worker: true}, st, chs)

	recv := &killingReceiver{ok: map[string]int{}, types: map[string]string{}}
	killed := make(chan struct{})
	recv.onFirst = func() {
		w1.Kill()
		startNode(t, srv, cfg, node.Roles{Worker: true}, st, chs)
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

// failingReceiver answers 500 to every post until healed, then 204.
type failingReceiver struct {
	mu     sync.Mutex
	posts  int
	healed bool
}

func (r *failingReceiver) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.posts++
	if !r.healed {
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (r *failingReceiver) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.posts
}

// A delivery retried for days must not grow its workflow's history: its
// attempts are retries of one activity, which Temporal records once, when
// the activity ends, however many there were.
func TestADeliveryThatFailsManyTimesKeepsItsWorkflowHistorySmall(t *testing.T) {
	endToEnd(t)
	const failures = 15
	dir := tempDir(t)
	srv := startServer(t, dir)
	cfg := testConfig(dir)
	cfg.Webhook.RetryBase, cfg.Webhook.RetryCap = 100*time.Millisecond, 200*time.Millisecond
	cfg.PollInterval = 100 * time.Millisecond
	st := openStore(t, dir)
	_, chs := stubChains(cfg)
	node := startNode(t, srv, cfg, node.Roles{API: true, Worker: true}, st, chs)
	recv := &failingReceiver{}
	hook := httptest.NewServer(recv)
	defer hook.Close()
	ctx := context.Background()
	sub, err := st.CreateWebhook(ctx, hook.URL, []string{store.EventEvidenceConfirmed})
	require.NoError(t, err)

	postMany(t, node.APIAddr(), t.Name(), 1, nil)
	waitConfirmed(t, st, 1, time.Minute)
	require.Eventually(t, func() bool { return recv.count() >= failures }, 2*time.Minute, 100*time.Millisecond,
		"the receiver is posted to again and again")
	ds, err := st.ListDeliveries(ctx, sub.ID, 1)
	require.NoError(t, err)
	require.Len(t, ds, 1)
	wid := workflows.WebhookWorkflowID(workflows.DeliveryRef{DeliveryID: ds[0].ID, Run: ds[0].Run})
	events := func() int {
		n := 0
		it := node.Client.GetWorkflowHistory(ctx, wid, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			_, err := it.Next()
			require.NoError(t, err)
			n++
		}
		return n
	}
	retrying := events()
	assert.LessOrEqual(t, retrying, 8, "after %d failed attempts", recv.count())

	recv.mu.Lock()
	recv.healed = true
	recv.mu.Unlock()
	require.Eventually(t, func() bool {
		d, err := st.GetDelivery(ctx, ds[0].ID)
		return err == nil && d.Status == store.DeliveryDelivered
	}, time.Minute, 100*time.Millisecond)
	require.NoError(t, node.Client.GetWorkflow(ctx, wid, "").Get(ctx, nil))
	d, err := st.GetDelivery(ctx, ds[0].ID)
	require.NoError(t, err)
	assert.Greater(t, d.Attempts, failures)
	assert.LessOrEqual(t, events(), 12, "a delivered delivery's whole history, after %d attempts", d.Attempts)
}

// Command record re-records the replay corpus in testsuite/testdata/histories
// from real runs on the embedded Temporal server:
//
//	go run ./testsuite/record
//
// Re-record only deliberately: after a workflow change that is meant to break
// replay (and is not worth a workflow.GetVersion branch), say why in the commit.
package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/keeperhq/keeper/internal/chains"
	"github.com/keeperhq/keeper/internal/config"
	"github.com/keeperhq/keeper/internal/dev/stub"
	"github.com/keeperhq/keeper/internal/devserver"
	"github.com/keeperhq/keeper/internal/node"
	"github.com/keeperhq/keeper/internal/settlement"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/worker"
	"github.com/keeperhq/keeper/internal/workflows"
)

func main() {
	out := flag.String("out", "testsuite/testdata/histories", "directory for the history files")
	only := flag.String("only", "", "record only this part (anchors, wallets, webhooks, epoch-intents) and leave the other files as they are")
	flag.Parse()
	if err := run(*out, *only); err != nil {
		log.Fatal(err)
	}
}

// scenario is one recorded run: faults injected before one evidence is posted.
type scenario struct {
	name   string
	faults func(*stub.Chain)
}

// The anchor scenarios are recorded as files anchorFirst… with the revision
// of AnchorBatch the dispatcher starts today (workflows.AnchorRevision).
// Files 01–04 hold the same scenarios recorded on revision 0, before the
// revision existed, and files 15–18 on revision 1: batches a keeper of that
// time started still replay on them, so they are kept as recorded and never
// written again. On revision 2 the retried submit fails both its local
// attempts and succeeds as an activity. Files 34–37 hold revision 2 before
// the evidence log; since it, files 38–41 (the workflow is the same, its
// batches commit to log checkpoints: SubmitAnchor's result carries a
// checkpoint's root).
const anchorFirst = 38

var scenarios = []scenario{
	{"anchor_batch_confirmed", func(*stub.Chain) {}},
	{"anchor_batch_submit_retried", func(c *stub.Chain) { c.FailSubmits(2, false) }},
	{"anchor_batch_dropped_resubmitted", func(c *stub.Chain) { c.DropNext(1) }},
	{"anchor_batch_dead_lettered", func(c *stub.Chain) { c.FailSubmits(1, true) }},
}

func run(outDir, only string) error {
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	dir, err := os.MkdirTemp("", "keeper-record-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	srv, err := devserver.Start(ctx, devserver.Options{Namespace: "default", SearchAttributes: worker.SearchAttributes, Logger: quiet})
	if err != nil {
		return err
	}
	defer srv.Stop()

	cfg := config.Default()
	cfg.DataDir, cfg.HTTPAddr, cfg.Chains = dir, "127.0.0.1:0", []string{stub.Name}
	cfg.StubConfirmDelay, cfg.ConfirmPoll = 200*time.Millisecond, 50*time.Millisecond
	cfg.RetryBase, cfg.RetryCap, cfg.RetryJitter = 100*time.Millisecond, time.Second, 10*time.Millisecond
	cfg.AnchorInterval = 0                                              // each scenario's batch goes at once, not a minute after the last
	cfg.AllowPrivateURLs, cfg.PollInterval = true, 200*time.Millisecond // webhook receivers on 127.0.0.1, started soon
	cfg.Webhook.RetryBase, cfg.Webhook.RetryCap, cfg.Webhook.RetryWindow = 100*time.Millisecond, 200*time.Millisecond, 6*time.Second
	chain := stub.New(cfg.StubConfirmDelay)
	node, err := node.Start(ctx, node.Options{
		Config: cfg, Roles: node.Roles{API: true, Worker: true}, Logger: quiet,
		Chains:        map[string]chains.Adapter{stub.Name: chain},
		ClientOptions: client.Options{HostPort: srv.FrontendAddr(), Namespace: srv.Namespace()},
	})
	if err != nil {
		return err
	}
	defer node.Shutdown(ctx)
	switch only {
	case "webhooks":
		return recordWebhooks(ctx, node, outDir, webhookFirst)
	case "wallets":
		return recordWallets(ctx, srv, node, dir, outDir)
	case "epoch-intents":
		return recordEpochIntents(ctx, node, outDir)
	}
	if err := recordAnchors(ctx, node, chain, outDir); err != nil || only == "anchors" {
		return err
	}
	if err := recordEpochs(ctx, node, outDir, len(scenarios)); err != nil {
		return err
	}
	if err := recordEpochIntents(ctx, node, outDir); err != nil {
		return err
	}
	if err := recordWallets(ctx, srv, node, dir, outDir); err != nil {
		return err
	}
	return recordWebhooks(ctx, node, outDir, webhookFirst)
}

// recordAnchors records one AnchorBatch per scenario.
func recordAnchors(ctx context.Context, node *node.Node, chain *stub.Chain, outDir string) error {
	for i, sc := range scenarios {
		sc.faults(chain)
		id, err := postEvidence(node.APIAddr(), sc.name)
		if err != nil {
			return fmt.Errorf("%s: %w", sc.name, err)
		}
		ev, err := waitSettled(ctx, node.Store, id)
		if err != nil {
			return fmt.Errorf("%s: %w", sc.name, err)
		}
		wid := workflows.WorkflowID(stub.Name, ev.Anchors[0].BatchID)
		if err := waitClosed(ctx, node.Client, wid); err != nil {
			return fmt.Errorf("%s: %w", sc.name, err)
		}
		name := strings.Replace(sc.name, "anchor_batch", fmt.Sprintf("anchor_batch_revision_%d_log", workflows.AnchorRevision), 1)
		path := filepath.Join(outDir, fmt.Sprintf("%02d_%s.json", anchorFirst+i, name))
		if err := writeHistory(ctx, node.Client, wid, path); err != nil {
			return fmt.Errorf("%s: %w", sc.name, err)
		}
		fmt.Printf("%s: workflow %s ended %s -> %s\n", sc.name, wid, ev.Status, path)
	}
	return nil
}

// epochScenarios are recorded EpochCompute runs: one computed, paid and
// anchored; one quarantined because its accounting source lists an account twice.
var epochScenarios = []struct {
	name, epoch string
	body        func(sourceURL string) string
}{
	{"epoch_compute_completed", "recorded-completed", func(string) string {
		return `{"pool":"1000","usage":[{"account":"alice","units":"1"},{"account":"bob","units":"1"},{"account":"carol","units":"1"}]}`
	}},
	{"epoch_compute_quarantined", "recorded-quarantined", func(source string) string {
		return `{"pool":"1000","source":"` + source + `"}`
	}},
}

func recordEpochs(ctx context.Context, node *node.Node, outDir string, done int) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	source := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `[{"account":"alice","units":"3"},{"account":"bob","units":"1"},{"account":"alice","units":"4"}]`)
	})}
	go source.Serve(ln)
	defer source.Close()

	for i, sc := range epochScenarios {
		resp, err := http.Post("http://"+node.APIAddr()+"/rewarder/epochs/"+sc.epoch+"/compute", "application/json",
			strings.NewReader(sc.body("http://"+ln.Addr().String()+"/usage")))
		if err != nil {
			return fmt.Errorf("%s: %w", sc.name, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			return fmt.Errorf("%s: compute: HTTP %d", sc.name, resp.StatusCode)
		}
		wid := workflows.EpochWorkflowID(sc.epoch)
		if err := waitClosed(ctx, node.Client, wid); err != nil {
			return fmt.Errorf("%s: %w", sc.name, err)
		}
		e, err := node.Store.GetEpoch(ctx, sc.epoch)
		if err != nil {
			return fmt.Errorf("%s: %w", sc.name, err)
		}
		path := filepath.Join(outDir, fmt.Sprintf("%02d_%s.json", done+i+1, sc.name))
		if err := writeHistory(ctx, node.Client, wid, path); err != nil {
			return fmt.Errorf("%s: %w", sc.name, err)
		}
		fmt.Printf("%s: workflow %s ended %s -> %s\n", sc.name, wid, e.Status, path)
	}
	return nil
}

// epochIntentsFile is the number of the recorded EpochCompute whose intents
// the ledger refused: version 1 of internal/workflows/epoch.go's
// intents-failure-quarantines, recorded after the files before it existed.
const epochIntentsFile = 22

// recordEpochIntents records an epoch quarantined because the built-in
// ledger refuses one of its intents (it holds the key for another amount).
func recordEpochIntents(ctx context.Context, node *node.Node, outDir string) error {
	const name, epoch = "epoch_compute_intents_quarantined", "recorded-intents-quarantined"
	if _, _, err := node.Store.RecordIntent(ctx, store.LedgerIntent{IdempotencyKey: settlement.Key(epoch, "bob"), Epoch: epoch, Account: "bob", Amount: "1"}); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	resp, err := http.Post("http://"+node.APIAddr()+"/rewarder/epochs/"+epoch+"/compute", "application/json",
		strings.NewReader(`{"pool":"1000","usage":[{"account":"alice","units":"1"},{"account":"bob","units":"1"}]}`))
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		return fmt.Errorf("%s: compute: HTTP %d", name, resp.StatusCode)
	}
	wid := workflows.EpochWorkflowID(epoch)
	if err := waitClosed(ctx, node.Client, wid); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	e, err := node.Store.GetEpoch(ctx, epoch)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if e.Status != store.EpochQuarantined {
		return fmt.Errorf("%s: the epoch ended %s (%s), not quarantined", name, e.Status, e.Reason)
	}
	path := filepath.Join(outDir, fmt.Sprintf("%02d_%s.json", epochIntentsFile, name))
	if err := writeHistory(ctx, node.Client, wid, path); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	fmt.Printf("%s: workflow %s ended %s -> %s\n", name, wid, e.Status, path)
	return nil
}

func postEvidence(apiAddr, name string) (string, error) {
	d := sha256.Sum256([]byte(name))
	body, _ := json.Marshal(map[string]any{"digest": fmt.Sprintf("%x", d), "chains": []string{stub.Name}})
	resp, err := http.Post("http://"+apiAddr+"/v1/evidence", "application/json", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var a struct{ ID string }
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil || a.ID == "" {
		return "", fmt.Errorf("post evidence: HTTP %d", resp.StatusCode)
	}
	return a.ID, nil
}

// evidenceReader is the store as waitSettled reads it (*store.Store).
type evidenceReader interface {
	GetEvidence(ctx context.Context, id string) (store.Evidence, error)
}

func waitSettled(ctx context.Context, st evidenceReader, id string) (store.Evidence, error) {
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		ev, err := st.GetEvidence(ctx, id)
		if err != nil {
			return ev, err
		}
		if ev.Status == store.StatusConfirmed || ev.Status == store.StatusDeadLetter {
			return ev, nil
		}
	}
	return store.Evidence{}, fmt.Errorf("evidence %s did not settle within a minute", id)
}

func waitClosed(ctx context.Context, c client.Client, wid string) error {
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		d, err := c.DescribeWorkflowExecution(ctx, wid, "")
		if err != nil {
			return err
		}
		if d.GetWorkflowExecutionInfo().GetStatus() != enums.WORKFLOW_EXECUTION_STATUS_RUNNING {
			return nil
		}
	}
	return fmt.Errorf("workflow %s still running after a minute", wid)
}

func writeHistory(ctx context.Context, c client.Client, wid, path string) error {
	it := c.GetWorkflowHistory(ctx, wid, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var h historypb.History
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return err
		}
		h.Events = append(h.Events, ev)
	}
	b, err := protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(&h)
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

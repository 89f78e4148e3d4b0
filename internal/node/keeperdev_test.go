package node_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/internal/config"
	"github.com/keeperhq/keeper/internal/dev/devchain"
	"github.com/keeperhq/keeper/internal/dev/devnet"
	"github.com/keeperhq/keeper/internal/dev/stub"
	"github.com/keeperhq/keeper/internal/devserver"
	"github.com/keeperhq/keeper/internal/leaktest"
	"github.com/keeperhq/keeper/internal/node"
	"github.com/keeperhq/keeper/internal/worker"
)

// keeperDev is what `keeper dev` starts (embedded Temporal, API and
// worker, both local chains), started once for the package's tests that
// need a whole node: one Temporal server per test binary. Its chains are
// keeper dev's, made fast: the EVM chain seals a block every 50 ms, ahead
// of the clock, and finalizes 3 blocks deep (keeper dev's seals about one
// a second and finalizes 32 deep, half a minute); a Solana slot is 25 ms.
type keeperDev struct {
	Base   string // the API's base URL
	EVM    *devchain.Chain
	Solana *devnet.Devnet
	// LogKey is the log's verifier key, made by the test before the node
	// started: what a verifier of its receipts pins.
	LogKey string
}

var (
	devOnce sync.Once
	dev     *keeperDev
	devErr  error
	devStop []func() // run in reverse by TestMain
)

// TestMain stops the shared keeper dev after the tests, then fails the
// run if a goroutine is left running (leaktest), but for those its
// embedded Temporal server leaves (leaktest.TemporalServer).
func TestMain(m *testing.M) {
	code := m.Run()
	for i := len(devStop) - 1; i >= 0; i-- {
		devStop[i]()
	}
	if err := leaktest.Find(leaktest.TemporalServer...); code == 0 && err != nil {
		fmt.Fprintln(os.Stderr, "leaktest:", err)
		code = 1
	}
	os.Exit(code)
}

// sharedKeeperDev starts the package's keeper dev node on first use.
func sharedKeeperDev(t *testing.T) *keeperDev {
	t.Helper()
	devOnce.Do(func() { dev, devErr = startKeeperDev() })
	require.NoError(t, devErr, "start keeper dev")
	return dev
}

func startKeeperDev() (*keeperDev, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	log := slog.New(slog.DiscardHandler)
	dir, err := os.MkdirTemp("", "keeper-node-test-")
	if err != nil {
		return nil, err
	}
	devStop = append(devStop, func() { os.RemoveAll(dir) })

	cfg := config.Default()
	cfg.DataDir = dir
	cfg.HTTPAddr = "127.0.0.1:0"
	cfg.AnchorInterval = config.DevAnchorInterval
	cfg.AllowPrivateURLs = true
	cfg.ConfirmPoll = 100 * time.Millisecond
	skey, vkey, err := evlog.GenerateKey(cfg.Log.Origin)
	if err != nil {
		return nil, err
	}
	cfg.Log.KeyFile = filepath.Join(dir, "log-signer.key")
	if err := os.WriteFile(cfg.Log.KeyFile, []byte(skey+"\n"), 0o600); err != nil {
		return nil, err
	}

	srv, err := devserver.Start(ctx, devserver.Options{DataDir: dir, Namespace: "default", SearchAttributes: worker.SearchAttributes, Logger: log})
	if err != nil {
		return nil, err
	}
	devStop = append(devStop, func() { srv.Stop() })
	// Where keeper dev's chains keep the funded keys the node signs with.
	keys := filepath.Join(dir, config.DevKeyDir)
	evm, err := devchain.Start(ctx, devchain.Options{Dir: keys, ChainID: uint64(cfg.EVM.ChainID), BlockTime: 50 * time.Millisecond, FinalityDepth: 3, AheadOfClock: true, Logger: log})
	if err != nil {
		return nil, err
	}
	devStop = append(devStop, func() { evm.Stop() })
	sol, err := devnet.Start(context.Background(), devnet.Options{Dir: keys, SlotTime: 25 * time.Millisecond, Logger: log})
	if err != nil {
		return nil, err
	}
	devStop = append(devStop, sol.Stop)
	cfg.EVM.RPCURL, cfg.Solana.RPCURL = evm.URL(), sol.URL()
	n, err := node.Start(ctx, node.Options{
		Config: cfg, Roles: node.Roles{API: true, Worker: true}, Logger: log,
		ExtraChains:   map[string]node.ChainMaker{stub.Name: stub.Make},
		ClientOptions: client.Options{HostPort: srv.FrontendAddr(), Namespace: srv.Namespace()},
	})
	if err != nil {
		return nil, err
	}
	devStop = append(devStop, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		n.Shutdown(ctx) // stops every goroutine the node started, as leaktest checks
	})
	return &keeperDev{Base: "http://" + n.APIAddr(), EVM: evm, Solana: sol, LogKey: vkey}, nil
}

// postConfirmed posts an evidence (body: POST /v1/evidence's JSON) and
// waits until it is confirmed on every chain it names; it returns its id.
func (d *keeperDev) postConfirmed(t *testing.T, body string) string {
	t.Helper()
	resp, err := http.Post(d.Base+"/v1/evidence", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	var ev struct {
		ID string `json:"id"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&ev))
	resp.Body.Close()
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
	require.Eventually(t, func() bool {
		resp, err := http.Get(d.Base + "/v1/evidence/" + ev.ID)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var st struct {
			Status string `json:"status"`
		}
		return json.NewDecoder(resp.Body).Decode(&st) == nil && st.Status == "confirmed"
	}, 2*time.Minute, 100*time.Millisecond, "evidence %s is anchored on the local chains", ev.ID)
	return ev.ID
}

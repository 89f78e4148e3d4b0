package node

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/keeperhq/keeper/internal/starter"
)

// readinessChecks are what /readyz asks, on every address that serves it:
// the store, the Temporal server, with a worker its task-queue workers, and
// each chain's node.
func (n *Node) readinessChecks() []starter.Check {
	checks := []starter.Check{
		{Name: "store", Ping: n.Store.Ping},
		{Name: "temporal", Ping: func(ctx context.Context) error {
			_, err := n.Client.CheckHealth(ctx, &client.CheckHealthRequest{})
			return err
		}},
	}
	if n.Roles.Worker {
		// With the server answering (above), started workers poll their
		// task queues.
		checks = append(checks, starter.Check{Name: "worker", Ping: func(context.Context) error {
			if err := n.workerErr.Load(); err != nil {
				return *err
			}
			if !n.workersUp.Load() {
				return errors.New("not polling its task queues: the workers have not started, or are stopping")
			}
			return nil
		}}, starter.Check{Name: "log", Ping: func(context.Context) error {
			if seq := n.sequencer.Load(); seq != nil {
				return seq.Err()
			}
			return nil
		}})
	}
	for name, c := range n.Chains {
		checks = append(checks, starter.Check{Name: "chain:" + name, Ping: c.Ping})
	}
	return checks
}

// opsMux serves /health, /readyz and /metrics, for the addresses beside the
// API: KEEPER_HEALTH_ADDR (`keeper worker`'s own) and KEEPER_METRICS_ADDR.
func (n *Node) opsMux() (*http.ServeMux, error) {
	token, err := n.Cfg.Token()
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", starter.MetricsAuth(starter.AuthOptions{Token: token, MetricsOpen: n.Cfg.MetricsOpen}, n.MetricsHandler()))
	mux.HandleFunc("GET /health", starter.Health)
	mux.Handle("GET /readyz", starter.Ready(n.readinessChecks(), n.draining.Load, nil, n.witnessReadyDetail))
	return mux, nil
}

// startHealthListener serves /health, /readyz and /metrics on the node's
// health address (config.HealthAddrFor): `keeper worker`'s only address,
// 127.0.0.1:8081 unless KEEPER_HEALTH_ADDR says otherwise.
func (n *Node) startHealthListener() error {
	addr := n.Cfg.HealthAddrFor(n.Roles.API)
	if addr == "" {
		return nil
	}
	mux, err := n.opsMux()
	if err != nil {
		return err
	}
	ln, err := listen("KEEPER_HEALTH_ADDR", addr)
	if err != nil {
		if n.Cfg.HealthAddr == "" {
			return fmt.Errorf("%w (the default, also `keeper api`'s; give each worker on this host an address of its own)", err)
		}
		return err
	}
	n.healthHTTP = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, WriteTimeout: 30 * time.Second}
	n.healthAddr = ln.Addr().String()
	n.serve("KEEPER_HEALTH_ADDR", n.healthHTTP, ln)
	return nil
}

// HealthAddr is where the node serves /health and /readyz beside its API
// ("" when only the API's address does).
func (n *Node) HealthAddr() string { return n.healthAddr }

package bench

import (
	"cmp"
	"context"
	"fmt"
	"os"

	"github.com/keeperhq/keeper/internal/config"
	"github.com/keeperhq/keeper/internal/redact"
)

// The deployments a run can measure side by side (Options.Deployments).
const (
	// DeploySQLite is one process: embedded Temporal server, local chains,
	// API, dispatcher and worker, keeper's store and Temporal's on SQLite.
	DeploySQLite = "sqlite"
	// DeployPostgres is the same process with keeper's store and the
	// Temporal server on fresh PostgreSQL databases.
	DeployPostgres = "postgres"
	// DeployMulti is `keeper devserver` (Temporal on PostgreSQL), `keeper
	// devchains`, two `keeper api` and two `keeper worker` processes on one
	// PostgreSQL store, each a child process of the bench; the load is
	// spread over both APIs.
	DeployMulti = "multi"
	// DeployWitnessed is DeploySQLite with the log's witnesses: --witnesses
	// local ones (2 unless given), at a quorum of all of them, in the same
	// process, as `keeper dev --witnesses N` runs them.
	DeployWitnessed = "witnessed"
)

// AllDeployments is every deployment, in the order a side-by-side run
// measures them.
var AllDeployments = []string{DeploySQLite, DeployWitnessed, DeployPostgres, DeployMulti}

// defaultBenchWitnesses is how many local witnesses DeployWitnessed runs
// unless --witnesses says.
const defaultBenchWitnesses = 2

// DeploymentReport is what the phases measured on one deployment.
type DeploymentReport struct {
	Name        string         `json:"name"`               // sqlite, postgres or multi
	Processes   string         `json:"processes"`          // what ran, for people
	Store       string         `json:"store,omitempty"`    // keeper's records; a URL never shows its password
	Temporal    string         `json:"temporal,omitempty"` // the Temporal server's storage
	LowLoad     *LowLoadReport `json:"low_load,omitempty"`
	Cadence     *CadenceReport `json:"cadence,omitempty"`
	Intake      *IntakeReport  `json:"intake,omitempty"`
	Batched     *AnchorReport  `json:"batched,omitempty"`
	PerEvidence *AnchorReport  `json:"per_evidence,omitempty"`
	Bulk        *AnchorReport  `json:"bulk,omitempty"`
	Tiles       *TilesReport   `json:"tiles,omitempty"`
	Ratio       float64        `json:"batched_over_per_evidence,omitempty"`
}

// newDeployment describes deployment name ("" for the one process where
// o.Config puts the store and Temporal).
func newDeployment(o Options, name string) *DeploymentReport {
	onPostgres := "PostgreSQL " + redact.URL(o.PostgresURL) + " (fresh databases, dropped after)"
	switch name {
	case DeploySQLite:
		return &DeploymentReport{Name: name, Processes: "one process", Store: "SQLite keeper.db", Temporal: "SQLite temporal.db"}
	case DeployWitnessed:
		n := cmp.Or(o.Config.Dev.Witnesses, defaultBenchWitnesses)
		return &DeploymentReport{Name: name, Processes: fmt.Sprintf("one process with %d local witnesses of the log (quorum %d)", n, n),
			Store: "SQLite keeper.db", Temporal: "SQLite temporal.db"}
	case DeployPostgres:
		return &DeploymentReport{Name: name, Processes: "one process", Store: onPostgres, Temporal: onPostgres}
	case DeployMulti:
		return &DeploymentReport{
			Name: name, Store: onPostgres, Temporal: onPostgres,
			Processes: fmt.Sprintf("%d processes: devchains, devserver, %d × api, %d × worker", 2+multiAPIs+multiWorkers, multiAPIs, multiWorkers),
		}
	}
	d := &DeploymentReport{Name: DeploySQLite, Processes: "one process", Store: "SQLite keeper.db", Temporal: "SQLite temporal.db"}
	if u := o.Config.StoreURL; u != "" {
		d.Name, d.Store = DeployPostgres, "PostgreSQL "+redact.URL(u)
	}
	if u := o.Config.Dev.TemporalDB; u != "" {
		d.Temporal = "PostgreSQL " + redact.URL(u)
	}
	return d
}

// singleProcess reports whether the deployment runs keeper in the bench's
// own process (whose memory the report follows).
func (d *DeploymentReport) singleProcess() bool { return d.Name != DeployMulti }

// deploy starts a fresh stack of deployment name on dir ("": one process as
// cfg says). The PostgreSQL deployments get databases of their own, dropped
// when the stack stops.
func deploy(ctx context.Context, o Options, name string, cfg config.Config, dir string) (*stack, error) {
	switch name {
	case "", DeploySQLite:
		return startStack(ctx, cfg, dir, o.Logger)
	case DeployWitnessed:
		cfg.Dev.Witnesses = cmp.Or(cfg.Dev.Witnesses, defaultBenchWitnesses)
		return startStack(ctx, cfg, dir, o.Logger)
	}
	dbs, err := freshDatabases(ctx, o.PostgresURL, o.Logger)
	if err != nil {
		return nil, err
	}
	cfg.StoreURL, cfg.Dev.TemporalDB = dbs.store, dbs.temporal
	var st *stack
	if name == DeployMulti {
		bin := o.Binary
		if bin == "" {
			if bin, err = os.Executable(); err != nil {
				dbs.drop()
				return nil, fmt.Errorf("bench: the keeper executable for the multi-process deployment: %w", err)
			}
		}
		st, err = startMulti(ctx, bin, cfg, dir, o.Logger)
	} else {
		st, err = startStack(ctx, cfg, dir, o.Logger)
	}
	if err != nil {
		dbs.drop()
		return nil, err
	}
	// First in, so run last: once nothing is connected any more.
	st.cleanup = append([]func(){dbs.drop}, st.cleanup...)
	return st, nil
}

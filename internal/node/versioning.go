package node

import (
	"context"
	"time"

	"github.com/keeperhq/keeper/internal/config"
	"github.com/keeperhq/keeper/internal/worker"
)

// Versioning is the Worker Deployment version the configuration has the
// node's workers poll as; the zero value (versioning off) is unversioned.
func Versioning(cfg config.Config) worker.Versioning {
	if !cfg.Versioning.Enabled {
		return worker.Versioning{}
	}
	return worker.Versioning{DeploymentName: cfg.Versioning.DeploymentName, BuildID: cfg.Versioning.BuildIDOrDefault()}
}

// startVersioning makes a versioned worker's build the deployment's current
// version when the deployment has never had one (see
// worker.PromoteFirstVersion), until ctx ends.
func (n *Node) startVersioning(ctx context.Context) {
	v := Versioning(n.Cfg)
	if !v.On() {
		return
	}
	n.Logger.Info("worker versioning on", "deployment", v.DeploymentName, "build_id", v.BuildID)
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		worker.PromoteFirstVersion(ctx, n.Client, v, time.Second, n.Logger)
	}()
}

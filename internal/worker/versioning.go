package worker

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// Versioning names the Worker Deployment version a worker polls as. The zero
// value is an unversioned worker: every workflow task goes to whichever worker
// polls first, whatever its code.
type Versioning struct {
	DeploymentName string
	BuildID        string
}

// On reports whether workers poll as a deployment version.
func (v Versioning) On() bool { return v.DeploymentName != "" && v.BuildID != "" }

// Version is the deployment version v names.
func (v Versioning) Version() sdkworker.WorkerDeploymentVersion {
	return sdkworker.WorkerDeploymentVersion{DeploymentName: v.DeploymentName, BuildID: v.BuildID}
}

// deploymentOptions has no default behaviour on purpose: with versioning on,
// registering a workflow that does not choose one below panics, so a new
// workflow cannot ship without that decision.
func (v Versioning) deploymentOptions() sdkworker.DeploymentOptions {
	if !v.On() {
		return sdkworker.DeploymentOptions{}
	}
	return sdkworker.DeploymentOptions{UseVersioning: true, Version: v.Version()}
}

var (
	// Pinned runs finish on the build that started them. For the short
	// workflows (AnchorBatch, EpochCompute): a new build may change them
	// freely, and the old build drains within their lifetime.
	Pinned = workflow.RegisterOptions{VersioningBehavior: workflow.VersioningBehaviorPinned}
	// AutoUpgrade runs move to the deployment's current build at their next
	// workflow task. For the long waits of wallet backfill (retry timers of up
	// to an hour, five times) and webhook deliveries (retried for up to a
	// day): pinning them would keep old builds running for hours, so their
	// code stays replay-compatible across builds instead (workflow.GetVersion,
	// checked by the replay tests).
	AutoUpgrade = workflow.RegisterOptions{VersioningBehavior: workflow.VersioningBehaviorAutoUpgrade}
)

// PromoteFirstVersion makes v the current version of its deployment when the
// deployment has never had one, so the first versioned rollout runs without an
// operator's step; every later build waits for `temporal worker deployment
// set-current-version` (or set-ramping-version). It returns once a version is
// current or ramping, or ctx ends; until then it retries every interval (the
// server learns of the version only once the worker's pollers reach it).
func PromoteFirstVersion(ctx context.Context, c client.Client, v Versioning, interval time.Duration, log *slog.Logger) {
	h := c.WorkerDeploymentClient().GetHandle(v.DeploymentName)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		settled, promoted, err := promoteOnce(ctx, h, v)
		switch {
		case promoted:
			log.Info("worker deployment: made this build the current version, the deployment's first", "deployment", v.DeploymentName, "build_id", v.BuildID)
			return
		case settled:
			return
		case refused(err):
			log.Warn("worker deployment: cannot make this build current, the deployment's first: run `temporal worker deployment set-current-version`", "deployment", v.DeploymentName, "build_id", v.BuildID, "error", err)
			return
		case err != nil && ctx.Err() == nil:
			log.Debug("worker deployment: first version not promoted yet", "deployment", v.DeploymentName, "build_id", v.BuildID, "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// promoteOnce reports settled when a version had already been current or
// ramping, and promoted when it made v current.
func promoteOnce(ctx context.Context, h client.WorkerDeploymentHandle, v Versioning) (settled, promoted bool, err error) {
	d, err := h.Describe(ctx, client.WorkerDeploymentDescribeOptions{})
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) {
		return false, false, nil // no poller of the deployment reached the server yet
	}
	if err != nil {
		return false, false, err
	}
	r := d.Info.RoutingConfig
	// A deployment whose current version was ever changed is managed by
	// someone, even when it now routes to unversioned workers (a rollback).
	if r.CurrentVersion != nil || r.RampingVersion != nil || !r.CurrentVersionChangedTime.IsZero() {
		return true, false, nil
	}
	known := false
	for _, s := range d.Info.VersionSummaries {
		known = known || s.Version == v.Version()
	}
	if !known {
		return false, false, nil
	}
	// The conflict token makes two builds starting at once promote one.
	_, err = h.SetCurrentVersion(ctx, client.WorkerDeploymentSetCurrentVersionOptions{BuildID: v.BuildID, ConflictToken: d.ConflictToken})
	return false, err == nil, err
}

// refused reports an answer that asking again will not change: the caller may
// not manage deployments, or the server has no Worker Deployments.
func refused(err error) bool {
	var denied *serviceerror.PermissionDenied
	var unimplemented *serviceerror.Unimplemented
	return errors.As(err, &denied) || errors.As(err, &unimplemented)
}

package config

import (
	"fmt"
	"runtime/debug"
	"strings"
)

// VersioningConfig configures Worker Versioning: each worker process polls as
// one version (deployment name + build id) of a Temporal Worker Deployment.
type VersioningConfig struct {
	Enabled        bool   // off: unversioned workers, as before
	DeploymentName string // the Worker Deployment all of keeper's task queues belong to
	BuildID        string // empty: BuildIDOrDefault
}

// BuildIDOrDefault is the build id this binary's workers poll with: the
// configured one, else the VCS revision Go stamped into the binary (its first
// 12 hex digits, with "-dirty" when built from modified sources), else its
// module version, else "dev".
func (v VersioningConfig) BuildIDOrDefault() string {
	if v.BuildID != "" {
		return v.BuildID
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	return buildIDFrom(bi)
}

func buildIDFrom(bi *debug.BuildInfo) string {
	var rev, dirty string
	for _, s := range bi.Settings {
		switch {
		case s.Key == "vcs.revision":
			rev = s.Value
		case s.Key == "vcs.modified" && s.Value == "true":
			dirty = "-dirty"
		}
	}
	if rev != "" {
		return rev[:min(12, len(rev))] + dirty
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	return "dev"
}

func (v VersioningConfig) validate() error {
	if !v.Enabled {
		return nil
	}
	// The server's own rules: it writes a version as "<deployment>:<build id>"
	// (formerly with "."), and keeps names starting "__" for itself.
	switch {
	case v.DeploymentName == "" || strings.ContainsAny(v.DeploymentName, ".:") || strings.HasPrefix(v.DeploymentName, "__"):
		return fmt.Errorf("KEEPER_DEPLOYMENT_NAME: must be non-empty, without '.' or ':', and not start with \"__\", got %q", v.DeploymentName)
	case strings.HasPrefix(v.BuildID, "__"):
		return fmt.Errorf("KEEPER_BUILD_ID: must not start with \"__\", got %q", v.BuildID)
	}
	return nil
}

// versioningKnobs are the settings of Worker Versioning.
func (c *Config) versioningKnobs() []Knob {
	return []Knob{
		{"worker-versioning", "KEEPER_WORKER_VERSIONING", "false", Node,
			"workers poll as a version (deployment name + build id) of a Temporal Worker Deployment: " +
				"AnchorBatch and EpochCompute runs finish on the build they started on, WalletSync and " +
				"Backfill move to the current build; the deployment's first version becomes current by itself, " +
				"later ones when you say so (see [Rolling out a new " + "build](production.md#rolling-out-a-new-build))",
			&c.Versioning.Enabled},
		{"deployment-name", "KEEPER_DEPLOYMENT_NAME", "keeper", Node,
			"Worker Deployment that versioned workers belong to (every keeper task queue)",
			&c.Versioning.DeploymentName},
		{"build-id", "KEEPER_BUILD_ID", "", Node,
			"versioned workers' build id; empty: the binary's VCS revision (12 hex digits, `-dirty` when " +
				"built from modified sources), else its module version, else `dev`",
			&c.Versioning.BuildID},
	}
}

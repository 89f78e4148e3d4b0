// Package cli holds keeper's commands that need no embedded Temporal server:
// `keeper worker`, `keeper api`, the API client commands (`submit`,
// `status`, `receipt`) and `keeper config`. It is the production binary's
// whole tree (cmd/keeperd), so it links nothing of the dev stack; cmd/keeper
// adds `dev`, `devserver`, `devchains` and `bench`.
package cli

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/contrib/envconfig"

	"github.com/keeperhq/keeper/internal/config"
	"github.com/keeperhq/keeper/internal/node"
)

// Root returns the keeper command with every subcommand of this package.
// extra makes the adapters of non-production chain names (the dev stub) for
// `keeper worker` and `keeper api`.
func Root(extra map[string]node.ChainMaker) *cobra.Command {
	root := &cobra.Command{
		Use:           "keeper",
		Short:         "Durable evidence anchoring, wallet backfill and reward epochs on Temporal",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddGroup(
		&cobra.Group{ID: GroupRun, Title: "Running keeper:"},
		&cobra.Group{ID: GroupClient, Title: "Clients (of the API, and of receipts without it):"},
		&cobra.Group{ID: GroupLog, Title: "The evidence log:"},
	)
	inGroup(GroupRun, root,
		nodeCmd("worker", "Run a Temporal worker (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TLS and API key from the environment)", node.Roles{Worker: true}, extra),
		nodeCmd("api", "Run the HTTP API and dispatcher against a Temporal cluster (TEMPORAL_* environment)", node.Roles{API: true}, extra),
		configCmd(), healthcheckCmd(), witnessCmd())
	inGroup(GroupClient, root, submitCmd(), statusCmd(), receiptCmd(), verifyCmd(), backfillCmd(), redriveCmd())
	inGroup(GroupLog, root, logCmd())
	return root
}

// The groups `keeper --help` lists its commands in. cmd/keeper adds
// GroupDev with the dev stack's commands.
const (
	GroupRun    = "run"
	GroupClient = "client"
	GroupLog    = "log"
	GroupDev    = "dev"
)

// InDevGroup adds cmds to root under a group of the dev stack's commands.
func InDevGroup(root *cobra.Command, cmds ...*cobra.Command) {
	root.AddGroup(&cobra.Group{ID: GroupDev, Title: "Development (the whole stack on one machine):"})
	inGroup(GroupDev, root, cmds...)
}

func inGroup(id string, root *cobra.Command, cmds ...*cobra.Command) {
	for _, c := range cmds {
		c.GroupID = id
	}
	root.AddCommand(cmds...)
}

// Logger returns keeper's logger on stderr at the named level, in the named
// format: "text", or "json" (also for "").
func Logger(level, format string) *slog.Logger {
	return NewLogger(os.Stderr, level, format)
}

// NewLogger is Logger writing to w.
func NewLogger(w io.Writer, level, format string) *slog.Logger {
	var l slog.Level
	switch strings.ToLower(level) {
	case "debug":
		l = slog.LevelDebug
	case "warn":
		l = slog.LevelWarn
	case "error":
		l = slog.LevelError
	default:
		l = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: l, ReplaceAttr: sdkKeys}
	if format == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

// sdkKeys renames the Temporal SDK's keys for a workflow execution (and the
// trace its tracing interceptor adds) to the ones keeper's own lines use, so
// one query (workflow_id="anchor-stub-7") finds the SDK's lines and keeper's
// alike.
func sdkKeys(groups []string, a slog.Attr) slog.Attr {
	if len(groups) == 0 {
		switch a.Key {
		case "WorkflowID":
			a.Key = "workflow_id"
		case "RunID":
			a.Key = "run_id"
		case "TraceID":
			a.Key = "trace_id"
		case "SpanID":
			a.Key = "span_id"
		}
	}
	return a
}

func nodeCmd(use, short string, roles node.Roles, extra map[string]node.ChainMaker) *cobra.Command {
	uses := config.Base | config.Store
	if roles.Worker {
		uses |= config.Worker | config.LogSigner
	}
	if roles.API {
		uses |= config.API
	}
	return Configured(&cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.NoArgs,
	}, uses, true, func(ctx context.Context, cmd *cobra.Command, cfg *config.Config) error {
		co, err := envconfig.LoadDefaultClientOptions()
		if err != nil {
			return fmt.Errorf("read the Temporal client configuration: %w", err)
		}
		co.HostPort = cmp.Or(co.HostPort, "127.0.0.1:7233")
		co.Namespace = cmp.Or(co.Namespace, "default")
		log := Logger(cfg.LogLevel, cfg.LogFormat)
		node, err := node.Start(ctx, node.Options{Config: *cfg, Roles: roles, ClientOptions: co, ExtraChains: extra, Logger: log})
		if err != nil {
			return err
		}
		log.Info("keeper "+use+" running", "temporal", co.HostPort, "namespace", co.Namespace, "api", node.APIAddr(), "health", node.HealthAddr(), "metrics", node.MetricsAddr(),
			"memory_limit_mib", tuned.Bytes>>20, "memory_limit_from", tuned.Source)
		// SIGINT or SIGTERM ends it with exit status 0; a node that cannot go
		// on by itself (node.Failed) with its cause and status 1, so that a
		// supervisor starts it again (docs/production.md, Restarts).
		select {
		case <-ctx.Done():
		case <-node.Failed():
		}
		sctx, cancel := context.WithTimeout(context.Background(), cfg.DrainTimeout+10*time.Second)
		defer cancel()
		err = node.Shutdown(sctx)
		if failed := node.Err(); failed != nil {
			if err != nil {
				log.Warn("shutdown", "error", err)
			}
			return failed
		}
		return err
	})
}

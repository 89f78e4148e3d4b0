package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/keeperhq/keeper/internal/cli"
	"github.com/keeperhq/keeper/internal/config"
	"github.com/keeperhq/keeper/internal/dev/localnet"
	"github.com/keeperhq/keeper/internal/dev/localwitness"
	"github.com/keeperhq/keeper/internal/devserver"
	"github.com/keeperhq/keeper/internal/node"
	"github.com/keeperhq/keeper/internal/redact"
	"github.com/keeperhq/keeper/internal/worker"
)

func devCmd() *cobra.Command {
	return cli.Configured(&cobra.Command{
		Use:   "dev",
		Short: "Run everything in one process: embedded Temporal server and Web UI, worker, API and local chains",
		Args:  cobra.NoArgs,
	}, config.Everything, true, func(ctx context.Context, cmd *cobra.Command, cfg *config.Config) error {
		if cfg.Dev.TLSCert != "" || cfg.Dev.TLSKey != "" || cfg.Dev.TLSClientCA != "" {
			// Its worker and API would need a client certificate of their own.
			return fmt.Errorf("TLS on the Temporal frontend is for `keeper devserver`; run `keeper worker` and `keeper api` against it")
		}
		cfg.DevCadence(cmd.Flags().Changed)
		cfg.DevURLs(cmd.Flags().Changed("webhook-allow-private"))
		log := cli.Logger(cfg.LogLevel, cmp.Or(cfg.LogFormat, "text"))
		stopPprof, err := cli.StartPprof(cfg.PprofAddr, log)
		if err != nil {
			return err
		}
		defer stopPprof()

		srv, err := devserver.Start(ctx, devserver.Options{
			DataDir: cfg.DataDir, DB: cfg.Dev.TemporalDB, FrontendPort: cfg.Dev.TemporalPort, UIPort: cfg.Dev.UIPort,
			Namespace: "default", SearchAttributes: worker.SearchAttributes, Logger: log.With("component", "temporal-server"),
			CodecEndpoint: cli.DevCodecEndpoint(*cfg),
		})
		if err != nil {
			return fmt.Errorf("embedded Temporal server: %w", err)
		}
		defer srv.Stop()
		cli.AllowDevUI(cfg, srv.UIAddr(), log)
		local, err := localnet.StartFor(ctx, cfg, log.With("component", "local-chains"))
		if err != nil {
			return err
		}
		if local != nil {
			defer local.Stop()
		}

		witnesses, err := localwitness.StartFor(ctx, cfg, log.With("component", "local-witnesses"))
		if err != nil {
			return err
		}
		defer witnesses.Stop()

		node, err := node.Start(ctx, node.Options{
			Config: *cfg, Roles: node.Roles{API: true, Worker: true}, ExtraChains: devChains, Logger: log,
			ClientOptions: client.Options{HostPort: srv.FrontendAddr(), Namespace: srv.Namespace()},
		})
		if err != nil {
			return err
		}
		printDevBanner(cmd.OutOrStdout(), cfg, node, srv, local, witnesses)
		out := cmd.OutOrStdout()

		select {
		case <-ctx.Done():
		case <-node.Failed(): // as `keeper worker` and `keeper api`: stop, and say why
		}
		fmt.Fprintln(out, "keeper dev: shutting down (draining in-flight work)")
		sctx, cancel := context.WithTimeout(context.Background(), cfg.DrainTimeout+10*time.Second)
		defer cancel()
		if err := node.Shutdown(sctx); err != nil {
			log.Warn("shutdown", "error", err)
		}
		if err := srv.Stop(); err != nil {
			log.Warn("stop Temporal server", "error", err)
		}
		fmt.Fprintln(out, "keeper dev: stopped")
		return node.Err()
	})
}

// printDevBanner says where everything `keeper dev` started listens.
func printDevBanner(out io.Writer, cfg *config.Config, n *node.Node, srv *devserver.Server, local *localnet.Net, witnesses *localwitness.Witnesses) {
	abs, _ := filepath.Abs(cfg.DataDir)
	fmt.Fprintf(out, "keeper dev is running (Ctrl-C stops it; a restart resumes unfinished work)\n")
	fmt.Fprintf(out, "  API              http://%s   (POST /v1/evidence, GET /v1/evidence/{id}, /health, /readyz, /metrics)\n", n.APIAddr())
	fmt.Fprintf(out, "  Temporal server  %s   (namespace %s; temporal CLI: --address %s)\n", srv.FrontendAddr(), srv.Namespace(), srv.FrontendAddr())
	if cfg.Dev.TemporalDB != "" {
		fmt.Fprintf(out, "  Temporal storage %s\n", srv.Storage())
	}
	if srv.UIAddr() != "" {
		fmt.Fprintf(out, "  Temporal Web UI  %s\n", srv.UIAddr())
	}
	if ep := cli.DevCodecEndpoint(*cfg); ep != "" {
		fmt.Fprintf(out, "  payload codec    %s   (payloads are encrypted; temporal CLI: --codec-endpoint %s)\n", ep, ep)
	}
	fmt.Fprintf(out, "  chains           %v\n", cfg.Chains)
	for _, c := range cfg.Chains {
		if iv := cfg.AnchorIntervalFor(c); iv > 0 {
			fmt.Fprintf(out, "  cadence          %s: a batch at most every %s (≤ %.0f anchor transactions an hour)\n", c, iv, float64(time.Hour)/float64(iv))
		}
	}
	local.Print(out, cfg.DataDir)
	if names := witnesses.Names(); len(names) > 0 {
		_, quorum, _ := cfg.LogWitnesses()
		fmt.Fprintf(out, "  witnesses        %s (quorum %d; receipts carry their cosignatures)\n", strings.Join(names, ", "), quorum)
	}
	var files []string
	if cfg.StoreURL != "" {
		fmt.Fprintf(out, "  records          %s\n", redact.URL(cfg.StoreURL))
	} else {
		files = append(files, "keeper.db")
	}
	if cfg.Dev.TemporalDB == "" {
		files = append(files, "temporal.db")
	}
	if len(files) > 0 {
		fmt.Fprintf(out, "  data             %s (%s)\n", abs, strings.Join(files, ", "))
	} else {
		fmt.Fprintf(out, "  data             %s\n", abs)
	}
}

func devserverCmd() *cobra.Command {
	return cli.Configured(&cobra.Command{
		Use:   "devserver",
		Short: "Run only the embedded Temporal server (and Web UI) on the data directory or PostgreSQL (--db), optionally with TLS (--tls-cert, --tls-key, --tls-client-ca)",
		Args:  cobra.NoArgs,
	}, config.Base|config.DevServer, false, func(ctx context.Context, cmd *cobra.Command, cfg *config.Config) error {
		log := cli.Logger(cfg.LogLevel, cmp.Or(cfg.LogFormat, "text"))
		srv, err := devserver.Start(ctx, devserver.Options{
			DataDir: cfg.DataDir, DB: cfg.Dev.TemporalDB, FrontendPort: cfg.Dev.TemporalPort, UIPort: cfg.Dev.UIPort,
			TLSCertFile: cfg.Dev.TLSCert, TLSKeyFile: cfg.Dev.TLSKey, TLSClientCAFile: cfg.Dev.TLSClientCA,
			Namespace: "default", SearchAttributes: worker.SearchAttributes, Logger: log,
		})
		if err != nil {
			return fmt.Errorf("embedded Temporal server: %w", err)
		}
		tls := "plaintext"
		switch {
		case cfg.Dev.TLSClientCA != "":
			tls = "TLS, client certificate required"
		case cfg.Dev.TLSCert != "":
			tls = "TLS"
		}
		out := cmd.OutOrStdout()
		fmt.Fprintf(out, "Temporal server %s (%s, namespace %s)\n", srv.FrontendAddr(), tls, srv.Namespace())
		if srv.UIAddr() != "" {
			fmt.Fprintf(out, "  Web UI   %s\n", srv.UIAddr())
		}
		fmt.Fprintf(out, "  storage  %s\n", srv.Storage())
		<-ctx.Done()
		return srv.Stop()
	})
}

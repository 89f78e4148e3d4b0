package cli

import (
	"cmp"
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/keeperhq/keeper/internal/config"
)

// ConfiguredRun is the body of a command that works on keeper's configuration.
type ConfiguredRun func(ctx context.Context, cmd *cobra.Command, cfg *config.Config) error

// Configured makes cmd run on keeper's configuration: the environment, then
// the flags of the knobs the parts in uses read (bound here, and no others).
// A configuration that does not load, an environment holding a former
// setting keeper names otherwise (config.CheckEnvironment), or with validate
// one that fails Validate, ends the command before run; other KEEPER_
// variables keeper does not read, and former names of settings, are logged
// as warnings. run gets a context
// that SIGINT and SIGTERM cancel.
func Configured(cmd *cobra.Command, uses config.Uses, validate bool, run ConfiguredRun) *cobra.Command {
	cfg, loadErr := config.Load(nil)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		notes, envErr := config.CheckEnvironment(os.Environ())
		if err := errors.Join(envErr, loadErr); err != nil {
			return err
		}
		format := "text"
		if cmd.Name() == "worker" || cmd.Name() == "api" {
			format = "json" // as their own logs
		}
		log := NewLogger(cmd.ErrOrStderr(), cfg.LogLevel, cmp.Or(cfg.LogFormat, format))
		for _, n := range notes {
			if n.Debug {
				log.Debug(n.Message, "variable", n.Name)
			} else {
				log.Warn(n.Message, "variable", n.Name)
			}
		}
		for _, d := range cfg.Deprecations() {
			log.Warn(d)
		}
		cfg.NetworkPresets(cmd.Flags().Changed)
		if validate {
			if err := cfg.Validate(); err != nil {
				return err
			}
		}
		ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
		defer stop()
		return run(ctx, cmd, &cfg)
	}
	cfg.Bind(cmd.Flags(), uses)
	return cmd
}

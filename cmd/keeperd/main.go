// Command keeperd is the production build of keeper: the worker, the API,
// verify, the API client commands, the log commands, config and healthcheck,
// without the embedded Temporal server, the local chains, the simulators or
// the benchmark that cmd/keeper adds for `keeper dev`. The image installs it
// as `keeper`, so its commands read as the README spells them.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/keeperhq/keeper/internal/cli"
)

// root is keeper's command tree with no extra chains: KEEPER_CHAINS names
// only real ones here, so a stub chain left in a production environment
// fails at start instead of anchoring nowhere.
func root() *cobra.Command {
	return cli.Root(nil)
}

func main() {
	cli.TuneGC()
	if err := root().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "keeper:", err)
		os.Exit(1)
	}
}

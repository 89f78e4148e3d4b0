// Command keeper anchors evidence, backfills wallets and settles reward
// epochs as Temporal workflows. `keeper dev` runs everything in one process.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/keeperhq/keeper/internal/cli"
	"github.com/keeperhq/keeper/internal/dev/stub"
	"github.com/keeperhq/keeper/internal/node"
)

// devChains are the simulated chains this binary offers besides the real
// ones: KEEPER_CHAINS=stub anchors in process.
var devChains = map[string]node.ChainMaker{stub.Name: stub.Make}

// root is keeper's command tree: the production commands and the dev
// stack's.
func root() *cobra.Command {
	r := cli.Root(devChains)
	cli.InDevGroup(r, devCmd(), devserverCmd(), devchainsCmd(), benchCmd())
	return r
}

func main() {
	cli.TuneGC()
	if err := root().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "keeper:", err)
		os.Exit(1)
	}
}

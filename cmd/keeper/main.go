// Command keeper anchors evidence, backfills wallets and settles reward
// epochs as Temporal workflows. `keeper dev` runs everything in one process.
package main

import (
	"fmt"
	"os"

	"github.com/keeperhq/keeper/internal/cli"
	"github.com/keeperhq/keeper/internal/dev/stub"
	"github.com/keeperhq/keeper/internal/node"
)

// devChains are the simulated chains this binary offers besides the real
// ones: KEEPER_CHAINS=stub anchors in process.
var devChains = map[string]node.ChainMaker{stub.Name: stub.Make}

func main() {
	root := cli.Root(devChains)
	cli.InDevGroup(root, devCmd(), devserverCmd(), devchainsCmd(), benchCmd())
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "keeper:", err)
		os.Exit(1)
	}
}

// Command keeper anchors evidence, backfills wallets and settles reward
// epochs as Temporal workflows. `keeper dev` runs everything in one process.
package main

import (
	"fmt"
	"os"

	"github.com/keeperhq/keeper/cli"
)

func main() {
	root := cli.Root()
	root.AddCommand(devCmd(), devserverCmd(), benchCmd())
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "keeper:", err)
		os.Exit(1)
	}
}

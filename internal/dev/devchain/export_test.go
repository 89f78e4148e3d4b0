package devchain

// SetLegacyPathScheme makes Start create persisted chains with geth's path
// state scheme, as keeper did before chains were made crash-safe, so tests
// can check how such a chain reopens after a kill.
func SetLegacyPathScheme(on bool) { legacyPathScheme = on }

// SetNodeName names the node's directory, as an older keeper did with the
// binary's name, and returns a function that restores the fixed name.
func SetNodeName(name string) (restore func()) {
	old := nodeName
	nodeName = name
	return func() { nodeName = old }
}

// Ticks is the number of times the block loop woke to seal, paused or not.
func (c *Chain) Ticks() int64 { return c.ticks.Load() }

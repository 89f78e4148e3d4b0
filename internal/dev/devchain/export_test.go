package devchain

// SetLegacyPathScheme makes Start create persisted chains with geth's path
// state scheme, as keeper did before chains were made crash-safe, so tests
// can check how such a chain reopens after a kill.
func SetLegacyPathScheme(on bool) { legacyPathScheme = on }

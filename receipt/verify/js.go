//go:build js

package verify

import "github.com/keeperhq/keeper/chainread"

// httpCaller: a browser has no HTTP client of Go's here; the page passes
// its own Caller (fetch) in Options.Caller.
func httpCaller(string) chainread.Caller { return nil }

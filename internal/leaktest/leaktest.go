// Package leaktest fails a package's tests when they leave goroutines
// running: the packages that own goroutines and locks (the poller, the
// dispatchers, the activities, both chain adapters, the store, the log and
// the node) call Main from their TestMain, and .ci/run runs them under the
// race detector too.
//
// The goroutines it lets through are listed below, each a named function
// with the reason it outlives a test; nothing else is.
package leaktest

import (
	"testing"

	"go.uber.org/goleak"
)

// ignored are the goroutines that outlive the tests by design, each named
// by the function it runs (goleak.IgnoreTopFunction) with why.
var ignored = []goleak.Option{
	// go-ethereum's core package starts its transaction-sender cache
	// workers when it is loaded, for the life of the process: the local
	// EtherLink-like chain (internal/dev/devchain) links it.
	goleak.IgnoreTopFunction("github.com/ethereum/go-ethereum/core.(*txSenderCacher).cache"),
	// The in-memory leveldb go-ethereum's p2p server opens as its node
	// database (p2p/enode.OpenDB) for the local chain's node keeps its pool
	// drain running after node.Close.
	goleak.IgnoreTopFunction("github.com/syndtr/goleveldb/leveldb.(*DB).mpoolDrain"),
}

// TemporalServer are the goroutines the embedded Temporal server
// (internal/devserver) leaves after Stop, for the packages whose tests run
// one: the server never stops some of its system workers (its per-namespace
// and scanner workers, SDK workers inside the server), which keep retrying
// its closed frontend over their gRPC connections, and its SQLite
// persistence keeps its pool's opener. Node's own workers are stopped by
// Shutdown before the check; what these names cover is the server's.
var TemporalServer = []goleak.Option{
	goleak.IgnoreTopFunction("go.temporal.io/sdk/internal.(*baseWorker).runTaskDispatcher"),
	goleak.IgnoreTopFunction("go.temporal.io/sdk/internal.(*baseWorker).runEagerTaskDispatcher"),
	goleak.IgnoreTopFunction("go.temporal.io/sdk/internal.(*localActivityTunnel).getTask"),
	goleak.IgnoreTopFunction("go.temporal.io/sdk/internal.(*sharedNamespaceWorker).run"),
	goleak.IgnoreTopFunction("go.temporal.io/sdk/internal/common/backoff.(*ConcurrentRetrier).throttleInternal"),
	goleak.IgnoreAnyFunction("go.temporal.io/sdk/internal.(*baseWorker).Start.func2"),
	goleak.IgnoreTopFunction("google.golang.org/grpc.(*addrConn).resetTransportAndUnlock"),
	goleak.IgnoreTopFunction("google.golang.org/grpc/internal/grpcsync.(*CallbackSerializer).run"),
	goleak.IgnoreTopFunction("database/sql.(*DB).connectionOpener"),
}

// Main runs the package's tests, then fails the run if any goroutine they
// started is still running (after a grace period goleak allows for
// goroutines that are on their way out).
func Main(m *testing.M) {
	goleak.VerifyTestMain(m, ignored...)
}

// Find reports goroutines still running, as Main checks them, for a
// TestMain that has cleanup of its own to do after the tests ran; more
// are further goroutines to let through (TemporalServer).
func Find(more ...goleak.Option) error {
	return goleak.Find(append(append([]goleak.Option(nil), ignored...), more...)...)
}

package node

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/keeperhq/keeper/internal/worker"
)

// FailedReadyHold is how long a node whose Temporal worker stopped for good
// keeps answering /readyz with 503 before it reports its failure (Failed),
// so that a readiness probe (every 10 s in deploy/k8s and
// docker-compose.yml) sees it unready before its process exits and is
// started again (docs/production.md, Restarts).
const FailedReadyHold = 10 * time.Second

// Failed is closed once the node can no longer do its work by itself: a
// listener of its own stopped serving, or a Temporal worker stopped for good
// (its namespace is gone, the server refuses the client). Err says why. The
// process should then shut the node down and exit non-zero, so that its
// supervisor starts it again; a node that is shut down or killed first
// never fails.
func (n *Node) Failed() <-chan struct{} { return n.failed }

// Err is why the node failed (nil until Failed is closed).
func (n *Node) Err() error {
	select {
	case <-n.failed:
		return n.failErr
	default:
		return nil
	}
}

// fail records the node's first failure and closes Failed.
func (n *Node) fail(err error) {
	n.failOnce.Do(func() {
		n.Logger.Error("keeper cannot go on: stopping, for the supervisor to start it again", "error", err)
		n.failErr = err
		close(n.failed)
	})
}

// workerOptions are the options of the node's Temporal workers; activities
// is each one's concurrency.
func (n *Node) workerOptions(activities int) worker.Options {
	return worker.Options{
		ActivityWorkers: activities, DrainTimeout: n.Cfg.DrainTimeout, Versioning: Versioning(n.Cfg),
		OnFatalError: n.workerStopped,
	}
}

// workerStopped is the workers' OnFatalError: /readyz fails at once, naming
// the cause, and after FailedReadyHold the node fails. A shutdown or kill
// meanwhile ends the wait, and the node does not fail.
func (n *Node) workerStopped(err error) {
	err = fmt.Errorf("the Temporal worker stopped polling for good: %w", err)
	if !n.workerErr.CompareAndSwap(nil, &err) {
		return // another of the node's workers told first
	}
	n.Logger.Error("a Temporal worker stopped for good; /readyz answers 503, and the process exits in "+FailedReadyHold.String(), "error", err)
	go func() {
		t := time.NewTimer(FailedReadyHold)
		defer t.Stop()
		select {
		case <-t.C:
			n.fail(err)
		case <-n.runCtx.Done():
		}
	}()
}

// listen listens on addr for the listener whose address the variable env
// sets, and says so when it cannot: "KEEPER_HTTP_ADDR: cannot listen on
// 127.0.0.1:8081: bind: address already in use".
func listen(env, addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) {
			err = op.Err // the address is said once
		}
		return nil, fmt.Errorf("%s: cannot listen on %s: %w", env, addr, err)
	}
	return ln, nil
}

// serve serves srv on ln until it is shut down or closed; a listener that
// fails before (its socket closed or broken under it) fails the node rather
// than leave a process that answers nothing.
func (n *Node) serve(env string, srv *http.Server, ln net.Listener) {
	n.wg.Go(func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			n.fail(fmt.Errorf("%s: stopped serving on %s: %w", env, ln.Addr(), err))
		}
	})
}

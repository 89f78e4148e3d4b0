package cli

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"runtime"
)

// While profiles are served, blocking and mutex contention are sampled too
// (the block and mutex profiles): one blocking event per pprofBlockRate
// nanoseconds blocked, one contended mutex in pprofMutexFraction.
const (
	pprofBlockRate     = 100_000
	pprofMutexFraction = 100
)

// StartPprof serves Go's profiles (/debug/pprof/) on addr, on its own
// listener so they never share the API's port or its auth. An empty addr
// serves nothing. The returned function stops the server.
func StartPprof(addr string, log *slog.Logger) (stop func(), err error) {
	if addr == "" {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("pprof listen on %s (KEEPER_PPROF_ADDR): %w", addr, err)
	}
	runtime.SetBlockProfileRate(pprofBlockRate)
	runtime.SetMutexProfileFraction(pprofMutexFraction)
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("pprof server stopped", "error", err)
		}
	}()
	log.Info("pprof profiles served", "url", "http://"+ln.Addr().String()+"/debug/pprof/")
	return func() {
		srv.Close()
		runtime.SetBlockProfileRate(0)
		runtime.SetMutexProfileFraction(0)
	}, nil
}

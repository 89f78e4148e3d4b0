package httpapi

import (
	"net/http"
	"sort"
	"strings"
	"sync/atomic"
)

// Methods are one path's handlers, by HTTP method.
type Methods map[string]http.HandlerFunc

// Route dispatches one path on method, answering 405 in JSON for the
// others (and HEAD as GET).
type Route struct {
	Pattern string
	Methods Methods
}

// Routes collects a feature's routes for the node's server, which adds what
// cuts across them (auth, limits, deadlines, traces) when it serves them.
type Routes struct{ list []Route }

// Handle adds pattern's handlers.
func (rs *Routes) Handle(pattern string, methods Methods) {
	rs.list = append(rs.list, Route{Pattern: pattern, Methods: methods})
}

// List is the routes in the order they were added.
func (rs *Routes) List() []Route { return rs.list }

func (rt Route) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h, ok := rt.Methods[r.Method]
	if !ok && r.Method == http.MethodHead {
		h, ok = rt.Methods[http.MethodGet]
	}
	if !ok {
		var allow []string
		for m := range rt.Methods {
			allow = append(allow, m)
			if m == http.MethodGet {
				allow = append(allow, http.MethodHead)
			}
		}
		sort.Strings(allow)
		w.Header().Set("Allow", strings.Join(allow, ", "))
		WriteError(w, &Error{Status: http.StatusMethodNotAllowed, Code: "method_not_allowed", Message: r.Method + " is not allowed on " + rt.Pattern})
		return
	}
	h(w, r)
}

// Drain is the process's shutdown as the routes that take work in see it:
// once started, they answer 503 and the readiness check fails, while reads
// keep working. The zero value is not draining; a nil *Drain never drains.
type Drain struct{ on atomic.Bool }

// Start begins draining.
func (d *Drain) Start() { d.on.Store(true) }

// Draining tells whether the process shuts down.
func (d *Drain) Draining() bool { return d != nil && d.on.Load() }

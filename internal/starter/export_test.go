package starter

import (
	"sort"
	"strings"
)

// RouteTable lists the API's routes as configured: each path pattern and the
// methods it serves.
func (a *API) RouteTable() map[string][]string {
	a.Handler() // sets up the metrics /metrics serves
	table := map[string][]string{}
	for _, r := range a.routes() {
		for m := range r.Methods {
			// OpenAPI has no wildcard: the description names a tile's
			// path (several segments) as one parameter.
			p := strings.ReplaceAll(r.Pattern, "{path...}", "{path}")
			table[p] = append(table[p], m)
		}
		sort.Strings(table[strings.ReplaceAll(r.Pattern, "{path...}", "{path}")])
	}
	return table
}

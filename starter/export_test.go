package starter

import "sort"

// RouteTable lists the API's routes as configured: each path pattern and the
// methods it serves.
func (a *API) RouteTable() map[string][]string {
	a.Handler() // sets up the metrics /metrics serves
	table := map[string][]string{}
	for _, r := range a.routes() {
		for m := range r.methods {
			table[r.pattern] = append(table[r.pattern], m)
		}
		sort.Strings(table[r.pattern])
	}
	return table
}

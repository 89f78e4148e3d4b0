package starter_test

import (
	"encoding/json"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The HTTP API page (docs/api.md) opens with a table whose first column names
// routes as code spans: "GET /v1/evidence/{id}", a bare "/log/key" taking the
// method before it, and "GET"/"DELETE /v1/webhooks/{id}" for two methods of one
// path. A path's query is left out and its {parameters} compare by position; a
// path with <placeholders> (/log/tile/<L>/<N>) spells out the route before it.

var (
	codeSpanRE = regexp.MustCompile("`([^`]*)`")
	routeRE    = regexp.MustCompile(`^(?:(GET|POST|PUT|PATCH|DELETE|HEAD) )?(/[^\s<>\[\]]*)$`)
	methodRE   = regexp.MustCompile(`^(GET|POST|PUT|PATCH|DELETE|HEAD)$`)
	paramRE    = regexp.MustCompile(`\{[^}/]*\}`)
)

// route is "METHOD /path" with every path parameter written {}.
func route(method, path string) string {
	path, _, _ = strings.Cut(path, "?")
	return method + " " + paramRE.ReplaceAllString(path, "{}")
}

// documentedRoutes reads the routes named in the first column of the first
// table of an API page.
func documentedRoutes(t *testing.T, page string) map[string]bool {
	t.Helper()
	routes := map[string]bool{}
	inTable := false
	for _, line := range strings.Split(page, "\n") {
		if !strings.HasPrefix(line, "|") {
			if inTable {
				break
			}
			continue
		}
		inTable = true
		cells := strings.Split(line, " | ")
		var bare []string // methods written alone, for the path that follows
		method := ""      // the method of the route before, for a bare path
		for _, span := range codeSpanRE.FindAllStringSubmatch(cells[0], -1) {
			if methodRE.MatchString(span[1]) {
				bare = append(bare, span[1])
				continue
			}
			m := routeRE.FindStringSubmatch(span[1])
			if m == nil {
				continue
			}
			if m[1] != "" {
				method = m[1]
			}
			require.NotEmpty(t, method, "a route without a method before it: %s", line)
			for _, mt := range append(bare, method) {
				routes[route(mt, m[2])] = true
			}
			bare = nil
		}
	}
	return routes
}

// describedRoutes reads every operation of an OpenAPI document.
func describedRoutes(t *testing.T, doc []byte) map[string]bool {
	t.Helper()
	var d struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(doc, &d))
	routes := map[string]bool{}
	for path, ops := range d.Paths {
		for method := range ops {
			if m := strings.ToUpper(method); methodRE.MatchString(m) {
				routes[route(m, path)] = true
			}
		}
	}
	return routes
}

func missing(from, in map[string]bool) []string {
	var out []string
	for r := range from {
		if !in[r] {
			out = append(out, r)
		}
	}
	sort.Strings(out)
	return out
}

func TestTheAPIPageAndTheOpenAPIDescriptionNameTheSameRoutes(t *testing.T) {
	page, err := os.ReadFile("../../docs/api.md")
	require.NoError(t, err)
	doc, err := os.ReadFile("openapi.json")
	require.NoError(t, err)
	documented, described := documentedRoutes(t, string(page)), describedRoutes(t, doc)
	require.Greater(t, len(described), 30, "the OpenAPI description's operations were read")

	assert.Empty(t, missing(described, documented), "routes of internal/starter/openapi.json that docs/api.md's table does not name")
	assert.Empty(t, missing(documented, described), "routes docs/api.md's table names that internal/starter/openapi.json does not describe")
}

func TestTheAPIPageReaderSeesEveryWayTheTableNamesARoute(t *testing.T) {
	page := "intro\n\n| method and path | answer |\n| --- | --- |\n" +
		"| `POST /v1/evidence` | 202 |\n" +
		"| `GET /v1/evidence?status=dead_letter&limit=100` | a page |\n" +
		"| `GET /log/checkpoint`, `/log/tile/{path}` (`/log/tile/<L>/<N>`) | the log |\n" +
		"| `GET`/`DELETE /v1/webhooks/{id}`, `POST /v1/webhooks/{id}/enable` | subscriptions |\n" +
		"| `GET /ledger/v1/epochs/{id}/intents` | intents |\n" +
		"\n| `GET /not/a/route` | a later table |\n"
	assert.Equal(t, map[string]bool{
		"POST /v1/evidence": true, "GET /v1/evidence": true,
		"GET /log/checkpoint": true, "GET /log/tile/{}": true,
		"GET /v1/webhooks/{}": true, "DELETE /v1/webhooks/{}": true, "POST /v1/webhooks/{}/enable": true,
		"GET /ledger/v1/epochs/{}/intents": true,
	}, documentedRoutes(t, page))
}

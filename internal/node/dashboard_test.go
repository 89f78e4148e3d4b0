package node_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// keeperMetric is how the dashboard and the alerting rules name keeper's
// metrics; a query naming none of them is an error too.
var keeperMetric = regexp.MustCompile(`\bkeeper_[a-z0-9_]+\b`)

// TestTheDashboardAndTheAlertsNameOnlyMetricsAKeeperDevNodeExports takes
// what `keeper dev` starts (the package's shared node: embedded Temporal,
// API and worker, both local chains), anchors one evidence on both chains
// so every series has been touched, and checks every query of deploy/grafana/keeper.json and every
// metric deploy/prometheus/alerts.yml names against the families the node's
// /metrics serves. It also shows the signers' balances exported per chain.
func TestTheDashboardAndTheAlertsNameOnlyMetricsAKeeperDevNodeExports(t *testing.T) {
	exported := exportedByKeeperDev(t)

	for _, chain := range []string{"etherlink", "solana"} {
		assert.Contains(t, exported.series, `keeper_chain_signer_balance{chain="`+chain+`"}`, "keeper dev exports the %s signer's balance", chain)
		assert.Contains(t, exported.series, `keeper_chain_signer_runway_days{chain="`+chain+`"}`)
	}

	queries := dashboardQueries(t, "../../deploy/grafana/keeper.json")
	require.NotEmpty(t, queries)
	for where, q := range queries {
		names := keeperMetric.FindAllString(q, -1)
		if assert.NotEmpty(t, names, "%s: %q names no keeper metric", where, q) {
			for _, name := range names {
				assert.True(t, exported.names[name], "%s: %q names %s, which keeper does not export", where, q, name)
			}
		}
	}
	for _, want := range []string{"keeper_chain_signer_balance", "keeper_chain_signer_runway_days", "keeper_intake_requests_total",
		"keeper_anchor_queue_depth", "keeper_anchor_batches_total", "keeper_anchor_oldest_unconfirmed_age_seconds",
		"keeper_dead_letters_total", "keeper_webhook_attempts_total"} {
		assert.True(t, anyNames(queries, want), "the dashboard shows %s", want)
	}

	rules, err := os.ReadFile("../../deploy/prometheus/alerts.yml")
	require.NoError(t, err)
	for _, name := range keeperMetric.FindAllString(string(rules), -1) {
		assert.True(t, exported.names[name], "alerts.yml names %s, which keeper does not export", name)
	}
}

func anyNames(queries map[string]string, metric string) bool {
	for _, q := range queries {
		if strings.Contains(q, metric) {
			return true
		}
	}
	return false
}

// dashboardQueries are the PromQL of every panel's targets (rows' nested
// panels too) and of the template variables, by where they are.
func dashboardQueries(t *testing.T, path string) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	type target struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	}
	type panel struct {
		Title   string   `json:"title"`
		Type    string   `json:"type"`
		Targets []target `json:"targets"`
		Panels  []panel  `json:"panels"`
	}
	var d struct {
		Panels     []panel `json:"panels"`
		Templating struct {
			List []struct {
				Name  string          `json:"name"`
				Type  string          `json:"type"`
				Query json.RawMessage `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	require.NoError(t, dec.Decode(&d))
	out := map[string]string{}
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			if p.Type != "row" {
				assert.NotEmpty(t, p.Targets, "panel %q has no query", p.Title)
			}
			for _, tg := range p.Targets {
				require.NotEmpty(t, tg.Expr, "panel %q, target %s", p.Title, tg.RefID)
				out["panel "+p.Title+" "+tg.RefID] = tg.Expr
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(v.Query, &q); err != nil {
			require.NoError(t, json.Unmarshal(v.Query, &q.Query), "variable %s", v.Name)
		}
		out["variable "+v.Name] = q.Query
	}
	return out
}

type exportedMetrics struct {
	names  map[string]bool // the families, and a histogram's _bucket, _sum and _count
	series string          // the /metrics text
}

// exportedByKeeperDev anchors one evidence on both local chains of the
// package's keeper dev node and reads its /metrics.
func exportedByKeeperDev(t *testing.T) exportedMetrics {
	t.Helper()
	d := sharedKeeperDev(t)
	d.postConfirmed(t, `{"digest":"`+strings.Repeat("ab", 32)+`","chains":["etherlink","solana"]}`)

	resp, err := http.Get(d.Base + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	text, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	out := exportedMetrics{names: map[string]bool{}, series: string(text)}
	sc := bufio.NewScanner(bytes.NewReader(text))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 4 || f[0] != "#" || f[1] != "TYPE" {
			continue
		}
		out.names[f[2]] = true
		switch f[3] {
		case "histogram":
			out.names[f[2]+"_bucket"], out.names[f[2]+"_sum"], out.names[f[2]+"_count"] = true, true, true
		case "summary":
			out.names[f[2]+"_sum"], out.names[f[2]+"_count"] = true, true
		}
	}
	require.NoError(t, sc.Err())
	return out
}

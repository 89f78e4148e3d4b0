package verifypage_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/dev/browsertest"
	"github.com/keeperhq/keeper/internal/dev/conformance"
	"github.com/keeperhq/keeper/internal/verifypage"
)

// corpus is the conformance corpus (conformance/README.md).
var corpus = conformance.Dir()

// TestThePageRunsTheWholeCorpus loads the served page once in Chromium and
// hands its verifier (receipt/verify compiled to WebAssembly) every vector
// of the conformance corpus, with the vector's recorded chain answers
// served over JSON-RPC to the browser's fetch: each must get the vector's
// verdict, failing check and time bound, as the Go package does.
func TestThePageRunsTheWholeCorpus(t *testing.T) {
	browser := browsertest.Start(t)
	srv := httptest.NewServer(verifypage.Handler(nil))
	t.Cleanup(srv.Close)
	start := time.Now()
	tab := browsertest.Open(t, browser, srv.URL+"/verify")
	t.Logf("page %d bytes, its verifier ready %s after the request", len(verifypage.Page()), time.Since(start).Round(time.Millisecond))

	conformance.Each(t, func(t *testing.T, v conformance.Vector) {
		rep := keeperVerify(t, tab, map[string]any{
			"receipt": v.Receipt, "trust": v.Trust, "trustUpdate": v.TrustUpdate, "logKey": "", "accounts": []string{},
			"fileSHA256": v.FileSHA256(), "endpoints": conformance.Serve(t, v), "clocks": v.Clocks,
		})
		v.Assert(t, conformance.Verdict{OK: rep.OK, Check: rep.Check, ExistedBy: rep.ExistedBy, Detail: rep.Reason})
	})
}

// report is what the corpus judges of receipt/verify's Report, as
// keeperVerify returns it.
type report struct {
	OK        bool      `json:"ok"`
	Check     string    `json:"check"`
	Reason    string    `json:"reason"`
	ExistedBy time.Time `json:"existed_by"`
}

// keeperVerify calls the page's verifier as the page's own code does.
func keeperVerify(t *testing.T, tab context.Context, input map[string]any) report {
	t.Helper()
	arg, err := json.Marshal(input)
	require.NoError(t, err)
	quoted, err := json.Marshal(string(arg)) // a JavaScript string literal
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(tab, 30*time.Second)
	defer cancel()
	out, err := chromedp.Run(ctx, chromedp.Evaluate[string](`keeperVerify(`+string(quoted)+`)`, chromedp.EvalAwaitPromise))
	require.NoError(t, err)
	var rep report
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	return rep
}

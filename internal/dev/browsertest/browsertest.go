// Package browsertest starts headless Chromium for the tests that drive
// keeper's /verify page.
package browsertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// Start starts headless Chromium (Debian's chromium on PATH) with a
// throwaway profile and returns its chromedp context; a tab is a
// chromedp.NewContext of it. The browser is closed and its profile removed
// when the test ends. In CI a missing Chromium fails the test; on a
// developer's machine it skips.
func Start(t *testing.T) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("chromium is not installed; CI installs it (.ci/run) and must run the browser test")
		}
		t.Skip("chromium is not installed (apt-get install chromium); skipping the browser test")
	}
	profile, err := os.MkdirTemp("", "keeper-chromium-")
	require.NoError(t, err)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(profile),
	)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() {
		_ = chromedp.Cancel(ctx) // closes the browser and waits for it to exit
		cancel()
		cancelAlloc()
		// Chromium's helper processes may still write to the profile for a
		// moment after the browser exits (t.TempDir's removal then failed
		// the test with "directory not empty").
		for range 50 {
			if os.RemoveAll(profile) == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Errorf("could not remove chromium's profile %s", profile)
	})
	require.NoError(t, chromedp.Do(ctx), "start chromium")
	return ctx
}

// Open opens url, the /verify page, in a new tab of browser and waits
// until its verifier (WebAssembly) is ready. The tab closes when the test
// ends.
func Open(t *testing.T, browser context.Context, url string) context.Context {
	t.Helper()
	tab, cancel := chromedp.NewContext(browser)
	t.Cleanup(cancel)
	require.NoError(t, chromedp.Do(tab), "open a tab") // the tab lives as long as the context of its first use
	ctx, cancelTimeout := context.WithTimeout(tab, 20*time.Second)
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(url), ready), "open %s", url)
	cancelTimeout()
	return tab
}

// ready waits for the page's verifier: a page whose verifier failed to
// load says why, and fails.
var ready chromedp.Action[chromedp.Void] = func(ctx context.Context, tab *chromedp.Target) (chromedp.Void, error) {
	state, err := chromedp.Poll[string](`document.querySelector("#engine").dataset.ready`)(ctx, tab)
	if err != nil {
		return chromedp.Void{}, err
	}
	if state != "true" {
		text, _ := chromedp.Evaluate[string](`document.querySelector("#engine").textContent`)(ctx, tab)
		return chromedp.Void{}, fmt.Errorf("the verifier did not load: %s", text)
	}
	return chromedp.Void{}, nil
}

// Outcome is what the /verify page shows after a run.
type Outcome struct {
	Result  string         `json:"result"` // "ok" or "fail"
	Check   string         `json:"check"`  // the first failed check
	Text    string         `json:"text"`
	Warning string         `json:"warning"`
	Pinned  string         `json:"pinned"` // what the run checked against: the key in full, self-signed or not
	Bound   string         `json:"bound"`  // "the file existed no later than T" from a trusted clock, else "no trusted clock: no time bound"
	Digest  map[string]any `json:"digest"` // "result" and "text" of the digest's line
	Chains  []ChainOutcome `json:"chains"`
}

// ChainOutcome is the page's line for one anchor.
type ChainOutcome struct {
	Chain   string `json:"chain"`
	Network string `json:"network"` // the network the verifier found it on
	Result  string `json:"result"`
	Check   string `json:"check"` // the failed check
	Text    string `json:"text"`
}

// Chain is the outcome of one chain's anchor: its result and failed check.
// A page without a line for the chain fails the test.
func (o Outcome) Chain(t *testing.T, name string) (result, check string) {
	t.Helper()
	for _, c := range o.Chains {
		if c.Chain == name {
			return c.Result, c.Check
		}
	}
	require.FailNow(t, "the page shows no result for "+name, "%+v", o)
	return
}

// Run is one run of the /verify page: the evidence file (optional), its
// receipt and the trust root given through the page's file inputs, the log key,
// accounts, clocks and chain endpoints typed in (empty: the fields stay as
// the page fills them).
type Run struct {
	Page, File, Receipt string
	Trust               string // a trust root file (JSON or signed note)
	LogKey              string
	Accounts            string            // CHAIN=ADDRESS or CAIP-10 ids, space-separated
	Clocks              string            // CAIP-2 networks whose clocks to trust beyond the defaults, space-separated
	Endpoints           map[string]string // chain → JSON-RPC URLs, space-separated
}

// Verify opens r.Page in a new tab of browser, fills it in, presses Verify
// and reads what the page shows.
func Verify(t *testing.T, browser context.Context, r Run) Outcome {
	t.Helper()
	tab, cancelTab := chromedp.NewContext(browser)
	defer cancelTab()
	ctx, cancel := context.WithTimeout(tab, 30*time.Second)
	defer cancel()
	steps := []chromedp.Action[chromedp.Void]{
		chromedp.Navigate(r.Page),
		ready,
		chromedp.SetUploadFiles(chromedp.CSS("#receipt-file"), []string{r.Receipt}),
		chromedp.Poll[chromedp.Void](`document.querySelector("#receipt-text").value !== ""`),
	}
	if r.File != "" {
		steps = append(steps, chromedp.SetUploadFiles(chromedp.CSS("#file"), []string{r.File}))
	}
	if len(r.Endpoints) > 0 {
		steps = append(steps, chromedp.WaitVisible(chromedp.CSS("#endpoints input")))
	}
	if r.Trust != "" {
		steps = append(steps, chromedp.SetUploadFiles(chromedp.CSS("#trust-file"), []string{r.Trust}),
			chromedp.Poll[chromedp.Void](`document.querySelector("#trust").value !== ""`))
	}
	if r.LogKey != "" {
		steps = append(steps, chromedp.SetValue(chromedp.CSS("#log-key"), r.LogKey))
	}
	if r.Accounts != "" {
		steps = append(steps, chromedp.SetValue(chromedp.CSS("#accounts"), r.Accounts))
	}
	if r.Clocks != "" {
		steps = append(steps, chromedp.SetValue(chromedp.CSS("#clocks"), r.Clocks))
	}
	for chain, url := range r.Endpoints {
		steps = append(steps, chromedp.SetValue(chromedp.CSS(fmt.Sprintf(`#endpoints input[data-chain=%q]`, chain)), url))
	}
	require.NoError(t, chromedp.Do(ctx, steps...), "fill in %s on %s", filepath.Base(r.Receipt), r.Page)
	return Press(t, ctx)
}

// Press presses Verify on the page open in tab, waits for its verdict and
// reads what the page shows.
func Press(t *testing.T, tab context.Context) Outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, 30*time.Second)
	defer cancel()
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#verify")), chromedp.WaitVisible(chromedp.CSS("#result[data-result]"))), "verify")
	out, err := chromedp.Run(ctx, chromedp.Evaluate[Outcome](`({
			result: document.querySelector("#result").dataset.result,
			check: document.querySelector("#result").dataset.check,
			text: document.querySelector("#result").textContent,
			warning: document.querySelector("#warning").textContent,
			pinned: document.querySelector("#pinned").textContent,
			bound: document.querySelector("#bound").textContent,
			digest: {result: document.querySelector("#digest").dataset.result || "", text: document.querySelector("#digest").textContent},
			chains: Array.from(document.querySelectorAll("#checks li"), (li) => ({
				chain: li.dataset.chain, network: li.dataset.network, result: li.dataset.result, check: li.dataset.check, text: li.textContent,
			})),
		})`))
	require.NoError(t, err, "read the outcome")
	return out
}

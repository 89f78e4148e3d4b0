// Package browsertest starts headless Chromium for the tests that drive
// keeper's /verify page.
package browsertest

import (
	"context"
	"os"
	"os/exec"
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

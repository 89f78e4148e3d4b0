package testsuite

import "testing"

// endToEnd marks a test that starts whole keeper stacks (Temporal, chains,
// workers, API): it runs under `go test -tags e2e ./testsuite`, which
// .ci/run runs in a step of its own, and is left out of the README's quick
// `go test ./...`.
func endToEnd(t *testing.T) {
	t.Helper()
	if !endToEndSuites {
		t.Skip("end-to-end suite: go test -tags e2e ./testsuite (.ci/run runs it)")
	}
}

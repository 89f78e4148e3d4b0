//go:build !e2e

package testsuite

// endToEndSuites: without -tags e2e (the README's quick `go test ./...`),
// the suites that start whole stacks are compiled but not run; the replay
// corpus and the deployment checks run either way.
const endToEndSuites = false

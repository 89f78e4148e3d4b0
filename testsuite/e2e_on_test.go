//go:build e2e

package testsuite

// endToEndSuites: built with -tags e2e (.ci/run's end-to-end step), the
// suites that start whole stacks run.
const endToEndSuites = true

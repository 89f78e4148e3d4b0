//go:build !budget

package testsuite

import "time"

// idleWindow is how long the idle keeper's requests are counted in go test
// ./...; .ci/run counts a full minute (budget_minute_test.go).
const idleWindow = 10 * time.Second

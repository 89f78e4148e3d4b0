package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The production binary keeps every command an operator or a client runs,
// and none of the dev stack's, which need what it does not link.
func TestTheProductionBinaryHasTheServingAndClientCommandsOnly(t *testing.T) {
	var names []string
	for _, c := range root().Commands() {
		names = append(names, c.Name())
	}
	for _, want := range []string{"worker", "api", "verify", "submit", "status", "receipt", "redrive", "backfill", "config", "healthcheck", "log"} {
		assert.Contains(t, names, want)
	}
	for _, dev := range []string{"dev", "devserver", "devchains", "bench"} {
		assert.NotContains(t, names, dev)
	}
}

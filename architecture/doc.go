// Package architecture holds no code: its test checks keeper's import rules
// (docs/architecture.md) against the real package graph, so a forbidden
// import fails CI.
package architecture

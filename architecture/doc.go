// Package architecture holds no code: its tests check keeper's import rules
// (docs/architecture.md) against the real package graph, so a forbidden
// import fails CI, and that every production function fits on a screen.
package architecture

// Package architecture holds no code: its tests check keeper's import rules
// (docs/architecture.md) against the real package graph, and who may hold
// the whole store, so a forbidden import or a consumer taking *store.Store
// fails CI.
package architecture

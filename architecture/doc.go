// Package architecture holds no code: its tests check keeper's import rules
// (docs/architecture.md) against the real package graph, who may hold the
// whole store, and the names of the features' files in every layer, so a
// forbidden import, a consumer taking *store.Store or a feature's file
// named otherwise in one layer fails CI.
package architecture

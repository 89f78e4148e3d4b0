// Package architecture holds no code: its tests check keeper's import rules
// (docs/architecture.md) against the real package graph, who may hold the
// whole store, the names of the features' files in every layer, and that
// every production function fits on a screen: a forbidden import, a
// consumer taking *store.Store, a feature's file named otherwise in one
// layer or a function too long or too branchy fails CI.
package architecture

// Package backfill is keeper's wallet-backfill feature (docs/backfill.md):
// the /v1/wallets routes (http.go), the dispatcher that hands added wallets
// to Temporal as WalletSync workflows and the reconciliation that hands it
// again the items no workflow works on (dispatch.go, reconcile.go), the
// activities that scan a network's history and finish a wallet
// (activities.go), the worker that runs them on the backfill task queue
// (worker.go) and the gauges read from the store (metrics.go).
//
// What a scan reads of a chain, and the rules that classify a wallet's
// transactions and reconcile its balances, are in backfill/scan, which
// links no store; the scanners are backfill/evmscan and backfill/solscan.
// The workflows are in internal/workflows, which calls the activities by
// their registered names (workflows.ScanNetworkActivity, ...).
package backfill

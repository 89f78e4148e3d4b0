// Package anchor is keeper's evidence anchoring (docs/anchoring.md): the
// /v1/evidence routes that take evidence in (one store transaction, never
// waiting on Temporal) under back-pressure, read it back with its receipt
// and re-drive dead letters (http.go, bulk.go, backlog.go, redrive.go), the
// retention that moves old confirmed evidence into the receipts archive
// (retention.go), the dispatcher that forms batches from pending evidence
// and starts one AnchorBatch workflow per batch (dispatch.go, cadence.go),
// the activities that submit each batch's anchor, wait for its finality
// and record its receipts (activities.go, with the finality watcher in
// watcher.go), the worker that runs them on the anchoring task queue
// (worker.go), and the metrics of each side (metrics.go, intakemetrics.go,
// progress.go).
//
// The workflow is in internal/workflows, which calls the activities by
// their registered names (workflows.SubmitAnchorActivity, ...). What a
// chain signs and broadcasts is internal/chains', the evidence log that a
// batch's anchor commits to is internal/logsvc's, and a receipt is built
// from the records by internal/receipts.
package anchor

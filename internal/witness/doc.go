// Package witness is keeper's witness (docs/production.md, Running keeper
// witness): a c2sp.org/tlog-witness server that cosigns the checkpoints of
// the logs it is configured with, each time they extend what it cosigned
// before, so that no log it witnesses can show two readers two histories
// with its cosignature on both.
//
// An add-checkpoint is decided by internal/tlogwitness (Check, in the order
// the spec gives), against the state this package keeps per log in its own
// SQLite file (store.go): the size and root it cosigned last. A checkpoint
// is cosigned only once its state is committed, by a compare-and-swap on
// the state it was checked against, one decision at a time (witness.go):
// two requests racing, a crash or a restart can cost a log a 409 and a
// resubmission, never two inconsistent cosignatures. Refused requests that
// the log's own key signed (a fork, a rollback, a proof that does not
// verify) are kept, with the bytes received, as evidence against the log
// and listed at GET /refused (http.go). metrics.go counts the answers.
//
// `keeper witness` (internal/cli) serves one; keeper dev starts several in
// process.
package witness

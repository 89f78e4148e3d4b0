// Package epoch is keeper's reward epochs (docs/epochs.md): the
// /rewarder/epochs routes that take an epoch in and start its EpochCompute
// workflow (and, when keeper runs the built-in ledger, its /ledger/v1
// routes), the epoch metrics the API reports from the store, the
// activities that seal an epoch's inputs, compute its payouts, write its
// artifacts, send its settlement intents and anchor its commitment, and the
// worker that runs them on the epoch task queue.
//
// The workflow is in internal/workflows, which calls the activities by
// their registered names (workflows.SealInputsActivity, ...). The reward
// calculus is internal/rewards', the settlement-intent protocol and the
// built-in ledger internal/settlement's.
package epoch

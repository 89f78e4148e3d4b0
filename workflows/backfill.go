package workflows

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/keeperhq/keeper/activities"
)

// BackfillTaskQueue is the task queue of wallet-backfill workflows and
// activities. It is apart from anchoring so that a wallet with a long history
// never holds the activity slots that anchor evidence; its workers bound
// concurrent scans with KEEPER_BACKFILL_WORKERS.
const BackfillTaskQueue = "keeper-backfill"

// Signals.
const (
	// SignalSync asks a WalletSync to (re)start networks: a SyncSignal.
	SignalSync = "sync"
	// SignalRetryNow asks a Backfill waiting for its next retry to retry at
	// once (the wallet was added again): a RetryNow.
	SignalRetryNow = "retry-now"
)

// BackfillPolicy carries the retry schedule and timeouts into the
// workflows, fixed for the life of a run and visible in its history.
type BackfillPolicy struct {
	Schedule    activities.RetrySchedule
	ScanTimeout time.Duration // one scan attempt, start to close
	Heartbeat   time.Duration // a scan whose worker stops heartbeating moves to another worker after this long
}

// NetworkGen is a network to backfill and the generation of the add that
// asked for it: each add that starts work again has a higher one.
type NetworkGen struct {
	Network string
	Gen     int64
}

// WalletSyncInput identifies the wallet: addresses and generations only.
type WalletSyncInput struct {
	Wallet   string
	Networks []NetworkGen
	Policy   BackfillPolicy
}

// SyncSignal is sent with SignalSync.
type SyncSignal struct {
	Networks []NetworkGen
}

// RetryNow is sent with SignalRetryNow.
type RetryNow struct {
	Gen int64
}

// WalletSyncResult is how each network ended and how the balances came out.
type WalletSyncResult struct {
	Networks []NetworkOutcome // in the order they were first asked for
	Summary  activities.WalletSummary
}

// NetworkOutcome is one network's last Backfill.
type NetworkOutcome struct {
	Network   string
	Status    string
	Transfers int
	Error     string
}

// BackfillInput identifies one (wallet, network) item.
type BackfillInput struct {
	Wallet  string
	Network string
	Gen     int64
	Policy  BackfillPolicy
}

// BackfillResult is an item's outcome.
type BackfillResult struct {
	Status     string // COMPLETED, FAILED (for good) or ABANDONED
	Gen        int64  // the newest add this run answered
	Attempts   int
	RetryCount int
	Transfers  int
	Error      string
}

// WalletWorkflowID is the id of a wallet's WalletSync: it de-duplicates adds.
func WalletWorkflowID(wallet string) string { return "wallet-" + wallet }

// BackfillWorkflowID is the id of one (wallet, network) Backfill.
func BackfillWorkflowID(network, wallet string) string { return "backfill-" + network + "-" + wallet }

// scanTimeoutAttempts bounds how often Temporal itself retries a scan
// attempt, which it only does when the attempt timed out (its worker died or
// stopped heartbeating): after that many the timeout counts as a failure and
// the backfill schedule applies (docs/retries.md).
const scanTimeoutAttempts = 10

type childRun struct {
	network string
	gen     int64 // the add the current (or last) run was started for
	want    int64 // the newest add asked for
	running bool
}

// WalletSync backfills a wallet on its networks: one Backfill child per
// network, all at once (the backfill workers' slots bound how many scans
// actually run). A SignalSync (the wallet added again) starts a network whose
// child has ended, or wakes one waiting for its retry. Once no child is
// running, it reclassifies the wallet's transfers and recalculates and
// reconciles its balances (docs/backfill.md), then ends, unless another add came in
// meanwhile.
func WalletSync(ctx workflow.Context, in WalletSyncInput) (WalletSyncResult, error) {
	var a *activities.Backfill
	finishCtx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: 5 * time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute},
	})

	var (
		children []*childRun
		outcomes []NetworkOutcome
		sel      = workflow.NewSelector(ctx)
	)
	find := func(network string) *childRun {
		for _, c := range children {
			if c.network == network {
				return c
			}
		}
		return nil
	}
	record := func(o NetworkOutcome) {
		for i := range outcomes {
			if outcomes[i].Network == o.Network {
				outcomes[i] = o
				return
			}
		}
		outcomes = append(outcomes, o)
	}
	var start func(c *childRun, gen int64)
	start = func(c *childRun, gen int64) {
		c.gen, c.want, c.running = gen, max(c.want, gen), true
		cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
			WorkflowID:            BackfillWorkflowID(c.network, in.Wallet),
			TaskQueue:             BackfillTaskQueue,
			TypedSearchAttributes: temporal.NewSearchAttributes(SAChain.ValueSet(c.network), SAStatus.ValueSet("pending")),
		})
		f := workflow.ExecuteChildWorkflow(cctx, Backfill, BackfillInput{Wallet: in.Wallet, Network: c.network, Gen: gen, Policy: in.Policy})
		sel.AddFuture(f, func(f workflow.Future) {
			var r BackfillResult
			if err := f.Get(ctx, &r); err != nil {
				r = BackfillResult{Status: activities.BackfillFailed, Gen: c.gen, Error: err.Error()}
			}
			c.running = false
			record(NetworkOutcome{Network: c.network, Status: r.Status, Transfers: r.Transfers, Error: r.Error})
			if c.want > r.Gen {
				// Added again after this run had stopped listening.
				start(c, c.want)
			}
		})
	}
	handle := func(s SyncSignal) {
		for _, n := range s.Networks {
			c := find(n.Network)
			switch {
			case c == nil:
				c = &childRun{network: n.Network}
				children = append(children, c)
				start(c, n.Gen)
			case n.Gen <= c.want:
				// Already asked for: a repeated signal.
			case !c.running:
				start(c, n.Gen)
			default:
				c.want = n.Gen
				// A child busy scanning ignores it; one waiting for its next
				// retry retries at once.
				workflow.SignalExternalWorkflow(ctx, BackfillWorkflowID(c.network, in.Wallet), "", SignalRetryNow, RetryNow{Gen: n.Gen})
			}
		}
	}
	running := func() bool {
		for _, c := range children {
			if c.running {
				return true
			}
		}
		return false
	}

	syncCh := workflow.GetSignalChannel(ctx, SignalSync)
	sel.AddReceive(syncCh, func(ch workflow.ReceiveChannel, _ bool) {
		var s SyncSignal
		ch.Receive(ctx, &s)
		handle(s)
	})
	handle(SyncSignal{Networks: in.Networks})
	for {
		for running() {
			sel.Select(ctx)
		}
		var sum activities.WalletSummary
		if err := workflow.ExecuteLocalActivity(finishCtx, a.FinishWallet, in.Wallet).Get(ctx, &sum); err != nil {
			return WalletSyncResult{Networks: outcomes}, err
		}
		for {
			var s SyncSignal
			if !syncCh.ReceiveAsync(&s) {
				break
			}
			handle(s)
		}
		if !running() {
			return WalletSyncResult{Networks: outcomes, Summary: sum}, nil
		}
	}
}

// Backfill scans one network's history of a wallet. A failed attempt is
// recorded and retried on the backfill schedule (docs/retries.md), the workflow sleeping on a
// durable timer in between (no activity slot is held while it waits): after
// the last retry the item is ABANDONED; a permanent error fails it at once.
// SignalRetryNow cuts a wait short. The workflow itself always completes;
// its result says how the item ended.
func Backfill(ctx workflow.Context, in BackfillInput) (BackfillResult, error) {
	var a *activities.Backfill
	ref := activities.BackfillRef{Wallet: in.Wallet, Network: in.Network}
	scanCtx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: in.Policy.ScanTimeout,
		HeartbeatTimeout:    in.Policy.Heartbeat,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    time.Minute,
			MaximumAttempts:    scanTimeoutAttempts,
		},
	})
	bookCtx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute},
	})
	retryNow := workflow.GetSignalChannel(ctx, SignalRetryNow)
	out := BackfillResult{Gen: in.Gen}
	for {
		setStatus(ctx, "running")
		out.Attempts++
		var res activities.ScanResult
		err := workflow.ExecuteActivity(scanCtx, a.ScanNetwork, ref).Get(ctx, &res)
		if err == nil {
			setStatus(ctx, "completed")
			out.Status, out.Transfers, out.RetryCount, out.Error = activities.BackfillCompleted, res.Transfers, 0, ""
			return out, nil
		}
		msg, permanent := scanFailure(err)
		var fo activities.FailOutcome
		fail := activities.FailInput{Ref: ref, Error: msg, Permanent: permanent, Now: workflow.Now(ctx), Schedule: in.Policy.Schedule}
		if err := workflow.ExecuteLocalActivity(bookCtx, a.FailScan, fail).Get(ctx, &fo); err != nil {
			return out, err
		}
		out.Status, out.RetryCount, out.Error = fo.Status, fo.RetryCount, msg
		setStatus(ctx, strings.ToLower(fo.Status))
		if fo.Wait == 0 {
			return out, nil
		}
		// A retry-now that came in during the attempt was answered by it.
		for {
			var r RetryNow
			if !retryNow.ReceiveAsync(&r) {
				break
			}
			out.Gen = max(out.Gen, r.Gen)
		}
		timerCtx, cancel := workflow.WithCancel(ctx)
		wait := workflow.NewSelector(ctx)
		wait.AddFuture(workflow.NewTimer(timerCtx, fo.Wait), func(workflow.Future) {})
		wait.AddReceive(retryNow, func(ch workflow.ReceiveChannel, _ bool) {
			var r RetryNow
			ch.Receive(ctx, &r)
			out.Gen = max(out.Gen, r.Gen)
		})
		wait.Select(ctx)
		cancel()
	}
}

// scanFailure is the message of a failed scan attempt and whether retrying
// cannot help.
func scanFailure(err error) (string, bool) {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return appErr.Error(), appErr.Type() == activities.ErrTypePermanent
	}
	var timeout *temporal.TimeoutError
	if errors.As(err, &timeout) {
		return "scan attempt timed out (" + timeout.TimeoutType().String() + ") " + strconv.Itoa(scanTimeoutAttempts) + " times", false
	}
	return err.Error(), false
}

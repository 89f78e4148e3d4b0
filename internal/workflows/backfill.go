package workflows

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
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
	// SignalBackfillWaiting tells a WalletSync that a child's network failed
	// and waits for its next retry, so the wallet's other networks need not
	// wait for it: a BackfillWaiting.
	SignalBackfillWaiting = "backfill-waiting"
)

// Versions (workflow.GetVersion) of the backfill workflows' changes, which
// runs started by an older build must replay without (docs/backfill.md).
const (
	// versionTellsWaiting: a Backfill tells its WalletSync when it waits
	// for a retry.
	versionTellsWaiting = "backfill-tells-wallet-it-waits"
	// versionFinishWhileWaiting: a WalletSync finishes the networks that
	// are done while another waits for its retry, instead of waiting for
	// every child to end.
	versionFinishWhileWaiting = "wallet-finishes-while-a-network-waits"
)

// BackfillPolicy carries the retry schedule and timeouts into the
// workflows, fixed for the life of a run and visible in its history.
type BackfillPolicy struct {
	Schedule    RetrySchedule
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

// BackfillWaiting is sent with SignalBackfillWaiting: the network and the
// newest add its Backfill had answered when it began to wait.
type BackfillWaiting struct {
	Network string
	Gen     int64
}

// WalletSyncResult is how each network ended and how the balances came out.
type WalletSyncResult struct {
	Networks []NetworkOutcome // in the order they were first asked for
	Summary  WalletSummary
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

// bookkeepingWindow is how long the store-bound local activities (FailScan,
// FinishWallet) keep retrying, as anchoring's RecordReceipts does: a local
// activity's retries otherwise end at its schedule-to-close timeout, which
// defaults to one attempt's, so a store outage longer than that failed the
// workflow and left its item RUNNING (docs/backfill.md, "Outages"). Only
// the options change, not the commands, so recorded histories replay as
// they are.
const bookkeepingWindow = 30 * 24 * time.Hour

// bookkeepingRetry retries a store that is down about once a minute.
func bookkeepingRetry() *temporal.RetryPolicy {
	return &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute}
}

type childRun struct {
	network string
	gen     int64 // the add the current (or last) run was started for
	want    int64 // the newest add asked for
	running bool
	waiting bool // running, but failed and waiting for its next retry
}

// WalletSync backfills a wallet on its networks: one Backfill child per
// network, all at once (the backfill workers' slots bound how many scans
// actually run). A SignalSync (the wallet added again) starts a network whose
// child has ended, or wakes one waiting for its retry. Once no child is
// scanning (each has ended or waits for its next retry) and a network has
// ended since, it reclassifies the wallet's transfers and recalculates and
// reconciles its balances on the networks that are done (docs/backfill.md,
// "Finish"); a network that waits is finished again when its child ends. It
// ends once no child runs, unless another add came in meanwhile.
func WalletSync(ctx workflow.Context, in WalletSyncInput) (WalletSyncResult, error) {
	finishCtx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		ScheduleToCloseTimeout: bookkeepingWindow,
		StartToCloseTimeout:    5 * time.Minute,
		RetryPolicy:            bookkeepingRetry(),
	})
	w := &walletSync{ctx: ctx, in: in, sel: workflow.NewSelector(ctx), retry: true}
	w.syncCh = workflow.GetSignalChannel(ctx, SignalSync)
	w.sel.AddReceive(w.syncCh, func(ch workflow.ReceiveChannel, _ bool) {
		var s SyncSignal
		ch.Receive(ctx, &s)
		w.handle(s)
	})
	w.sel.AddReceive(workflow.GetSignalChannel(ctx, SignalBackfillWaiting), func(ch workflow.ReceiveChannel, _ bool) {
		var bw BackfillWaiting
		ch.Receive(ctx, &bw)
		w.waitingForRetry(bw)
	})
	w.handle(SyncSignal{Networks: in.Networks})
	var sum WalletSummary
	for {
		// Finish when no child scans, a network has ended since the last
		// finish (due) and something changed since a finish found a
		// network still at work in the store (retry).
		for w.running() && !(w.due && w.retry && !w.scanning() && w.finishWhileWaiting()) {
			w.sel.Select(ctx)
		}
		if w.due && w.retry {
			if err := workflow.ExecuteLocalActivity(finishCtx, FinishWalletActivity, in.Wallet).Get(ctx, &sum); err != nil {
				return WalletSyncResult{Networks: w.outcomes}, err
			}
			w.due, w.retry = sum.Busy, false
		}
		w.drainSyncs()
		if !w.running() {
			return WalletSyncResult{Networks: w.outcomes, Summary: sum}, nil
		}
	}
}

// walletSync is one WalletSync run's state: its children and what they
// ended with.
type walletSync struct {
	ctx      workflow.Context
	in       WalletSyncInput
	sel      workflow.Selector
	syncCh   workflow.ReceiveChannel
	children []*childRun
	outcomes []NetworkOutcome
	// due: a network ended since the wallet was last finished; retry:
	// something changed since the last try to finish it.
	due, retry bool
}

// find is the child of a network, or nil.
func (w *walletSync) find(network string) *childRun {
	for _, c := range w.children {
		if c.network == network {
			return c
		}
	}
	return nil
}

// record keeps a network's latest outcome.
func (w *walletSync) record(o NetworkOutcome) {
	for i := range w.outcomes {
		if w.outcomes[i].Network == o.Network {
			w.outcomes[i] = o
			return
		}
	}
	w.outcomes = append(w.outcomes, o)
}

// start runs a network's Backfill child for an add, and again when it ends
// if a newer add came in meanwhile.
func (w *walletSync) start(c *childRun, gen int64) {
	c.gen, c.want, c.running = gen, max(c.want, gen), true
	cctx := workflow.WithChildOptions(w.ctx, workflow.ChildWorkflowOptions{
		WorkflowID:            BackfillWorkflowID(c.network, w.in.Wallet),
		TaskQueue:             BackfillTaskQueue,
		TypedSearchAttributes: temporal.NewSearchAttributes(SAChain.ValueSet(c.network), SAStatus.ValueSet("pending")),
	})
	f := workflow.ExecuteChildWorkflow(cctx, Backfill, BackfillInput{Wallet: w.in.Wallet, Network: c.network, Gen: gen, Policy: w.in.Policy})
	w.sel.AddFuture(f, func(f workflow.Future) {
		var r BackfillResult
		if err := f.Get(w.ctx, &r); err != nil {
			r = BackfillResult{Status: BackfillFailed, Gen: c.gen, Error: err.Error()}
		}
		c.running, c.waiting = false, false
		w.due, w.retry = true, true
		w.record(NetworkOutcome{Network: c.network, Status: r.Status, Transfers: r.Transfers, Error: r.Error})
		if c.want > r.Gen {
			// Added again after this run had stopped listening.
			w.start(c, c.want)
		}
	})
}

// handle answers an add: a new network's child starts, an ended one
// starts again, a running one is told.
func (w *walletSync) handle(s SyncSignal) {
	for _, n := range s.Networks {
		c := w.find(n.Network)
		switch {
		case c == nil:
			c = &childRun{network: n.Network}
			w.children = append(w.children, c)
			w.start(c, n.Gen)
		case n.Gen <= c.want:
			// Already asked for: a repeated signal.
		case !c.running:
			w.start(c, n.Gen)
		default:
			c.want, c.waiting = n.Gen, false
			// A child busy scanning ignores it; one waiting for its next
			// retry retries at once.
			workflow.SignalExternalWorkflow(w.ctx, BackfillWorkflowID(c.network, w.in.Wallet), "", SignalRetryNow, RetryNow{Gen: n.Gen})
		}
	}
}

// waitingForRetry marks a child that failed and waits for its next retry.
func (w *walletSync) waitingForRetry(bw BackfillWaiting) {
	// One sent before a re-add woke the child is out of date.
	if c := w.find(bw.Network); c != nil && c.running && bw.Gen >= c.want {
		c.waiting, w.retry = true, true
	}
}

// drainSyncs handles the adds that came in meanwhile.
func (w *walletSync) drainSyncs() {
	for {
		var s SyncSignal
		if !w.syncCh.ReceiveAsync(&s) {
			return
		}
		w.handle(s)
	}
}

func (w *walletSync) running() bool {
	for _, c := range w.children {
		if c.running {
			return true
		}
	}
	return false
}

func (w *walletSync) scanning() bool {
	for _, c := range w.children {
		if c.running && !c.waiting {
			return true
		}
	}
	return false
}

// finishWhileWaiting says whether this run finishes the wallet while a
// child waits for its retry: a run an older build began waits for every
// child, as recorded.
func (w *walletSync) finishWhileWaiting() bool {
	return workflow.GetVersion(w.ctx, versionFinishWhileWaiting, workflow.DefaultVersion, 1) >= 1
}

// Backfill scans one network's history of a wallet. A failed attempt is
// recorded and retried on the backfill schedule (docs/retries.md), the workflow sleeping on a
// durable timer in between (no activity slot is held while it waits): after
// the last retry the item is ABANDONED; a permanent error fails it at once.
// SignalRetryNow cuts a wait short. The workflow itself always completes;
// its result says how the item ended.
func Backfill(ctx workflow.Context, in BackfillInput) (BackfillResult, error) {
	ref := BackfillRef{Wallet: in.Wallet, Network: in.Network}
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
		ScheduleToCloseTimeout: bookkeepingWindow,
		StartToCloseTimeout:    30 * time.Second,
		RetryPolicy:            bookkeepingRetry(),
	})
	retryNow := workflow.GetSignalChannel(ctx, SignalRetryNow)
	out := BackfillResult{Gen: in.Gen}
	for {
		setStatus(ctx, "running")
		out.Attempts++
		var res ScanResult
		err := workflow.ExecuteActivity(scanCtx, ScanNetworkActivity, ref).Get(ctx, &res)
		if err == nil {
			setStatus(ctx, "completed")
			out.Status, out.Transfers, out.RetryCount, out.Error = BackfillCompleted, res.Transfers, 0, ""
			return out, nil
		}
		msg, permanent := scanFailure(err)
		var fo FailOutcome
		fail := FailInput{Ref: ref, Error: msg, Permanent: permanent, Now: workflow.Now(ctx), Schedule: in.Policy.Schedule}
		if err := workflow.ExecuteLocalActivity(bookCtx, FailScanActivity, fail).Get(ctx, &fo); err != nil {
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
		if workflow.GetVersion(ctx, versionTellsWaiting, workflow.DefaultVersion, 1) >= 1 {
			tellWaiting(ctx, BackfillWaiting{Network: in.Network, Gen: out.Gen})
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

// tellWaiting tells the WalletSync that started this Backfill that its
// network waits for a retry, so that the wallet's other networks are
// finished meanwhile (docs/backfill.md, "Finish"). A Backfill started on its
// own has no one to tell.
func tellWaiting(ctx workflow.Context, w BackfillWaiting) {
	parent := workflow.GetInfo(ctx).ParentWorkflowExecution
	if parent == nil {
		return
	}
	// Not waited on: a WalletSync that is gone has nothing left to finish.
	workflow.SignalExternalWorkflow(ctx, parent.ID, parent.RunID, SignalBackfillWaiting, w)
}

// scanFailure is the message of a failed scan attempt and whether retrying
// cannot help.
func scanFailure(err error) (string, bool) {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return appErr.Error(), appErr.Type() == ErrTypePermanent
	}
	var timeout *temporal.TimeoutError
	if errors.As(err, &timeout) {
		return "scan attempt timed out (" + timeout.TimeoutType().String() + ") " + strconv.Itoa(scanTimeoutAttempts) + " times", false
	}
	return err.Error(), false
}

package activities

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/activity"

	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/telemetry"
	"github.com/keeperhq/keeper/internal/workflows"
)

// activityLogger returns base carrying the running activity's workflow id,
// run id, activity type and attempt, then attrs, so every line an activity
// logs can be found by its workflow. base may be nil (no log).
func activityLogger(ctx context.Context, base *slog.Logger, attrs ...any) *slog.Logger {
	if base == nil {
		return slog.New(slog.DiscardHandler)
	}
	if activity.IsActivity(ctx) {
		info := activity.GetInfo(ctx)
		base = base.With("workflow_id", info.WorkflowExecution.ID, "run_id", info.WorkflowExecution.RunID,
			"activity", info.ActivityType.Name, "attempt", info.Attempt)
	} else if wt, ok := ctx.Value(waitKey{}).(store.Wait); ok {
		// The finality watcher, completing a ConfirmAnchor attempt.
		base = base.With("workflow_id", wt.WorkflowID, "run_id", wt.RunID, "activity", "ConfirmAnchor", "attempt", wt.Attempt)
	}
	return base.With(attrs...)
}

// waitKey carries the store.Wait a watcher's context acts for.
type waitKey struct{}

// log is the anchoring activities' logger for one batch.
func (a *Anchor) log(ctx context.Context, in workflows.BatchRef) *slog.Logger {
	return activityLogger(ctx, a.Logger, "batch_id", in.BatchID, "chain", in.Chain)
}

// chainSpan starts the span of one call to a chain adapter (a broadcast, a
// status lookup), under the activity's span.
func chainSpan(ctx context.Context, op string, in workflows.BatchRef) (context.Context, trace.Span) {
	return telemetry.Tracer(ctx).Start(ctx, in.Chain+" "+op, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("keeper.chain", in.Chain), attribute.Int64("keeper.batch_id", in.BatchID)))
}

// endSpan ends span, marking it failed when err is set.
func endSpan(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

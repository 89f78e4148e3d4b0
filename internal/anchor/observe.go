package anchor

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/activity"

	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/telemetry"
	"github.com/keeperhq/keeper/internal/worker"
	"github.com/keeperhq/keeper/internal/workflows"
)

// waitKey carries the store.Wait a watcher's context acts for.
type waitKey struct{}

// log is the anchoring activities' logger for one batch: its lines carry
// the running activity's workflow id, run id, activity type and attempt
// (worker.ActivityLogger), or, from the finality watcher completing a
// ConfirmAnchor attempt, those of that attempt.
func (a *Activities) log(ctx context.Context, in workflows.BatchRef) *slog.Logger {
	base := a.Logger
	if wt, ok := ctx.Value(waitKey{}).(store.Wait); ok && base != nil && !activity.IsActivity(ctx) {
		base = base.With("workflow_id", wt.WorkflowID, "run_id", wt.RunID, "activity", workflows.ConfirmAnchorActivity, "attempt", wt.Attempt)
	}
	return worker.ActivityLogger(ctx, base, "batch_id", in.BatchID, "chain", in.Chain)
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

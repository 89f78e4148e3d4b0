package anchor

import (
	"errors"

	"go.temporal.io/sdk/temporal"

	"github.com/keeperhq/keeper/internal/retry"
	"github.com/keeperhq/keeper/internal/workflows"
)

// anchorFailure turns a failed submit or confirm attempt into a Temporal
// application error: permanent ones are non-retryable, others carry the
// schedule's jittered delay for this attempt (docs/retries.md, anchor).
// Temporal's retry policy has no jitter, so the activity computes the delay
// and hands it back with NextRetryDelay.
func anchorFailure(s retry.Schedule, err error, attempt int32) error {
	if err == nil {
		return nil
	}
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return err
	}
	if retry.IsPermanent(err) {
		return temporal.NewNonRetryableApplicationError(err.Error(), workflows.ErrTypePermanent, nil)
	}
	return temporal.NewApplicationErrorWithOptions(err.Error(), workflows.ErrTypeTransient, temporal.ApplicationErrorOptions{
		NextRetryDelay: s.Next(int(attempt)),
	})
}

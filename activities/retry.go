package activities

import (
	"errors"
	"math/rand/v2"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/keeperhq/keeper/retry"
)

// Backoff is seed 000's retry rule for submit and confirm:
// delay = min(Base·2^attempts, Cap) + uniform jitter in [0, Jitter), with
// attempts clamped to 0–20. Temporal's retry policy has no jitter, so the
// activity computes the delay and hands it back with NextRetryDelay.
type Backoff struct {
	Base   time.Duration // 5 s
	Cap    time.Duration // 300 s
	Jitter time.Duration // 1 s
}

// DefaultBackoff is the seed's numbers.
var DefaultBackoff = Backoff{Base: 5 * time.Second, Cap: 300 * time.Second, Jitter: time.Second}

// Delay returns the wait after the given number of failed attempts (1 after
// the first failure), without jitter.
func (b Backoff) Delay(failures int) time.Duration {
	n := min(max(failures-1, 0), 20)
	d := b.Base << n
	if d > b.Cap || d <= 0 {
		d = b.Cap
	}
	return d
}

// next adds the jitter.
func (b Backoff) next(failures int) time.Duration {
	d := b.Delay(failures)
	if b.Jitter > 0 {
		d += rand.N(b.Jitter)
	}
	return d
}

// Error types seen in workflow histories and by retry policies.
const (
	ErrTypeTransient = "Transient"
	ErrTypePermanent = "Permanent"
)

// classify turns an error into a Temporal application error: permanent ones
// are non-retryable, others carry the seed-000 delay for this attempt.
func (b Backoff) classify(err error, attempt int32) error {
	if err == nil {
		return nil
	}
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return err
	}
	if retry.IsPermanent(err) {
		return temporal.NewNonRetryableApplicationError(err.Error(), ErrTypePermanent, nil)
	}
	return temporal.NewApplicationErrorWithOptions(err.Error(), ErrTypeTransient, temporal.ApplicationErrorOptions{
		NextRetryDelay: b.next(int(attempt)),
	})
}

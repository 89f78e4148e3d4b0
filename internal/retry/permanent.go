// Package retry holds keeper's failure and retry rules in one place: which
// errors are permanent, the anchor submit/confirm schedule, the backfill
// schedule, and the short retry of idempotent reads. It imports only the
// standard library; turning these rules into Temporal errors and policies is
// left to the activities and workflows. docs/retries.md describes every rule,
// its numbers and where it is applied.
package retry

import "errors"

// PermanentError marks a failure that retrying cannot fix: invalid payload,
// a decode error, misconfigured signer, a transaction the chain rejected for
// good.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }

// Permanent wraps err as a PermanentError. Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &PermanentError{Err: err}
}

// IsPermanent reports whether err (or anything it wraps) is permanent.
func IsPermanent(err error) bool {
	var p *PermanentError
	return errors.As(err, &p)
}

package retry

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPermanentErrorsAreRecognisedThroughWrapping(t *testing.T) {
	base := errors.New("invalid payload")
	err := fmt.Errorf("submit: %w", Permanent(base))
	assert.True(t, IsPermanent(err))
	assert.ErrorIs(t, err, base, "the cause stays reachable")
	assert.Equal(t, "submit: invalid payload", err.Error(), "the message is the cause's")
}

func TestOtherErrorsAreNotPermanent(t *testing.T) {
	assert.False(t, IsPermanent(errors.New("connection reset")))
	assert.False(t, IsPermanent(nil))
}

func TestPermanentOfNilIsNil(t *testing.T) {
	require.NoError(t, Permanent(nil))
}

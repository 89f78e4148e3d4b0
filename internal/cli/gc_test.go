package cli

import (
	"os"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestKeeperCollectsGarbageAtItsOwnTargetUnlessGOGCIsSet(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	t.Setenv("GOGC", "")
	os.Unsetenv("GOGC")
	TuneGC()
	assert.Equal(t, GCPercent, debug.SetGCPercent(100), "GOGC unset: keeper's target")

	t.Setenv("GOGC", "100")
	TuneGC()
	assert.Equal(t, 100, debug.SetGCPercent(100), "GOGC set: the runtime's, as GOGC says")
}

package witness_test

import (
	"testing"

	"github.com/keeperhq/keeper/internal/leaktest"
)

// TestMain fails the package's tests when they leave a goroutine running.
func TestMain(m *testing.M) { leaktest.Main(m) }

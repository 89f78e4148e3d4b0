package backfill_test

import (
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.temporal.io/sdk/activity"

	"github.com/keeperhq/keeper/internal/backfill"
)

// registry records what is registered on it, by name.
type registry map[string]any

func (r registry) RegisterActivityWithOptions(a any, o activity.RegisterOptions) { r[o.Name] = a }

// Registering a struct of activities (RegisterActivity) named each exported
// method after itself, and recorded histories hold those names. Workflows
// now call activities by name: every method must still be registered, under
// its own name and no other.
func TestEveryActivityMethodIsRegisteredUnderItsOwnName(t *testing.T) {
	acts := &backfill.Activities{}
	byName := registry{}
	backfill.RegisterActivities(byName, acts)
	var methods, registered []string
	for m := range reflect.TypeOf(acts).Methods() {
		methods = append(methods, m.Name)
	}
	for name, fn := range byName {
		registered = append(registered, name)
		assert.Equal(t, name, methodName(fn), "registered under another method's name")
	}
	assert.ElementsMatch(t, methods, registered, "the registered activities are not the struct's methods")
}

// methodName is the name of the method a method value calls
// ("…backfill.(*Activities).ScanNetwork-fm" → "ScanNetwork").
func methodName(fn any) string {
	full := runtime.FuncForPC(reflect.ValueOf(fn).Pointer()).Name()
	full = strings.TrimSuffix(full, "-fm")
	return full[strings.LastIndex(full, ".")+1:]
}

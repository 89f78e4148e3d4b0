// Package workertest checks a feature's activity registration: registering
// a struct of activities (RegisterActivity) once named each exported method
// after itself, and recorded histories hold those names, so every method
// must still be registered, under its own name and no other.
package workertest

import (
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.temporal.io/sdk/activity"

	"github.com/keeperhq/keeper/internal/worker"
)

// registry records what is registered on it, by name.
type registry map[string]any

func (r registry) RegisterActivityWithOptions(a any, o activity.RegisterOptions) { r[o.Name] = a }

// RequireEachMethodUnderItsName registers acts with register and checks
// that each of its exported methods, and nothing else, is registered under
// the method's own name, and that those names are want (the names the
// feature's workflows call).
func RequireEachMethodUnderItsName[A any](t *testing.T, acts *A, register func(worker.Registry, *A), want ...string) {
	t.Helper()
	byName := registry{}
	register(byName, acts)
	var methods, registered []string
	for m := range reflect.TypeOf(acts).Methods() {
		methods = append(methods, m.Name)
	}
	for name, fn := range byName {
		registered = append(registered, name)
		assert.Equal(t, name, methodName(fn), "registered under another method's name")
	}
	assert.ElementsMatch(t, methods, registered, "the registered activities are not the struct's methods")
	assert.ElementsMatch(t, want, registered, "the registered activities are not the ones the workflows call")
}

// methodName is the name of the method a method value calls
// ("…backfill.(*Activities).ScanNetwork-fm" → "ScanNetwork").
func methodName(fn any) string {
	full := runtime.FuncForPC(reflect.ValueOf(fn).Pointer()).Name()
	full = strings.TrimSuffix(full, "-fm")
	return full[strings.LastIndex(full, ".")+1:]
}

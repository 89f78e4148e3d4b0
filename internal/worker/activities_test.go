package worker

import (
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/keeperhq/keeper/internal/activities"
)

// Registering a struct of activities (RegisterActivity) named each exported
// method after itself, and recorded histories hold those names. Workflows
// now call activities by name: every method must still be registered, under
// its own name and no other.
func TestEveryActivityMethodIsRegisteredUnderItsOwnName(t *testing.T) {
	for _, c := range []struct {
		acts   any
		byName map[string]any
	}{
		{&activities.Anchor{}, anchorActivities(&activities.Anchor{})},
	} {
		typ := reflect.TypeOf(c.acts)
		t.Run(typ.Elem().Name(), func(t *testing.T) {
			var methods, registered []string
			for m := range typ.Methods() {
				methods = append(methods, m.Name)
			}
			for name, fn := range c.byName {
				registered = append(registered, name)
				assert.Equal(t, name, methodName(fn), "registered under another method's name")
			}
			assert.ElementsMatch(t, methods, registered, "the registered activities are not the struct's methods")
		})
	}
}

// methodName is the name of the method a method value calls
// ("…activities.(*Anchor).SubmitAnchor-fm" → "SubmitAnchor").
func methodName(fn any) string {
	full := runtime.FuncForPC(reflect.ValueOf(fn).Pointer()).Name()
	full = strings.TrimSuffix(full, "-fm")
	return full[strings.LastIndex(full, ".")+1:]
}

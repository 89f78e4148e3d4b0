package webhook_test

import (
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.temporal.io/sdk/activity"

	"github.com/keeperhq/keeper/internal/webhook"
	"github.com/keeperhq/keeper/internal/workflows"
)

// registry records what is registered on it.
type registry map[string]any

func (r registry) RegisterActivityWithOptions(a any, o activity.RegisterOptions) { r[o.Name] = a }

// Registering the struct (RegisterActivity) named each exported method
// after itself, and recorded histories hold those names: every method is
// registered under its own name and no other, and those are the names
// DeliverWebhook calls.
func TestEveryActivityMethodIsRegisteredUnderItsOwnName(t *testing.T) {
	r := registry{}
	webhook.RegisterActivities(r, &webhook.Activities{})
	var methods, registered []string
	for m := range reflect.TypeFor[*webhook.Activities]().Methods() {
		methods = append(methods, m.Name)
	}
	for name, fn := range r {
		registered = append(registered, name)
		full := strings.TrimSuffix(runtime.FuncForPC(reflect.ValueOf(fn).Pointer()).Name(), "-fm")
		assert.Equal(t, name, full[strings.LastIndex(full, ".")+1:], "registered under another method's name")
	}
	assert.ElementsMatch(t, methods, registered, "the registered activities are not the struct's methods")
	assert.ElementsMatch(t, []string{workflows.SendWebhookActivity, workflows.FailWebhookDeliveryActivity}, registered)
}

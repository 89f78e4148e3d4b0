package worker

import (
	"go.temporal.io/sdk/activity"
)

// Registry is where activities are registered: a worker, or a test's
// workflow environment.
type Registry interface {
	RegisterActivityWithOptions(a any, options activity.RegisterOptions)
}

// Register registers each activity of byName on r under its name: a
// feature's activities by the names its workflows call them
// (workflows.*Activity).
func Register(r Registry, byName map[string]any) {
	for name, fn := range byName {
		r.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: name})
	}
}

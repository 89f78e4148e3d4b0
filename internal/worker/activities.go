package worker

import (
	"go.temporal.io/sdk/activity"

	"github.com/keeperhq/keeper/internal/activities"
	"github.com/keeperhq/keeper/internal/workflows"
)

// Registry is where activities are registered: a worker, or a test's
// workflow environment.
type Registry interface {
	RegisterActivityWithOptions(a any, options activity.RegisterOptions)
}

// The activities of each feature by the names its workflows call them
// (workflows.*Activity): each method under its own name, the name
// registering the struct gave it before workflows called them by name, and
// that recorded histories hold.

func anchorActivities(a *activities.Anchor) map[string]any {
	return map[string]any{
		workflows.SubmitAnchorActivity:   a.SubmitAnchor,
		workflows.ConfirmAnchorActivity:  a.ConfirmAnchor,
		workflows.RecordReceiptsActivity: a.RecordReceipts,
		workflows.DeadLetterActivity:     a.DeadLetter,
	}
}

// RegisterAnchorActivities registers AnchorBatch's activities on r.
func RegisterAnchorActivities(r Registry, a *activities.Anchor) { Register(r, anchorActivities(a)) }

// Register registers each activity of byName on r under its name.
func Register(r Registry, byName map[string]any) {
	for name, fn := range byName {
		r.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: name})
	}
}

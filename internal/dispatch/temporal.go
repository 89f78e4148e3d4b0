package dispatch

import (
	"context"

	"go.temporal.io/sdk/client"
)

// WorkflowStarter starts a workflow; a Temporal client is one.
type WorkflowStarter interface {
	ExecuteWorkflow(ctx context.Context, options client.StartWorkflowOptions, workflow any, args ...any) (client.WorkflowRun, error)
}

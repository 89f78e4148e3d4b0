// Package worker is what every feature's Temporal worker shares: the
// options of a worker process, registering activities by name, the Worker
// Deployment version a worker polls as, and keeper's search attributes.
// Each feature's package builds its own worker on its task queue
// (anchor.NewWorker, backfill.NewWorker, epoch.NewWorker, webhook.NewWorker).
package worker

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/keeperhq/keeper/internal/workflows"
)

// Options tune one worker process.
type Options struct {
	ActivityWorkers int           // concurrent activities
	DrainTimeout    time.Duration // how long Stop lets in-flight activities finish
	Versioning      Versioning    // zero: unversioned
	// OnFatalError, when set, is told once that the worker stopped polling
	// for good: the Temporal server refused it in a way asking again will
	// not change (its namespace is gone, the client is refused). The worker
	// stops itself after the call; the process should then stop too, so
	// that its supervisor starts it again (docs/production.md, Restarts).
	OnFatalError func(error)
}

// SDKOptions are the Temporal worker options o sets: the activity slots,
// the drain timeout, the deployment version and the fatal-error callback.
// A feature's worker adds what only it needs (local activity slots).
func (o Options) SDKOptions() sdkworker.Options {
	return sdkworker.Options{
		MaxConcurrentActivityExecutionSize: o.ActivityWorkers,
		WorkerStopTimeout:                  o.DrainTimeout,
		DeploymentOptions:                  o.Versioning.deploymentOptions(),
		OnFatalError:                       o.OnFatalError,
	}
}

// SearchAttributes are the custom search attributes keeper's workflows set.
var SearchAttributes = map[string]enums.IndexedValueType{
	workflows.SAChain.GetName():     enums.INDEXED_VALUE_TYPE_KEYWORD,
	workflows.SAStatus.GetName():    enums.INDEXED_VALUE_TYPE_KEYWORD,
	workflows.SABatchSize.GetName(): enums.INDEXED_VALUE_TYPE_INT,
}

// EnsureSearchAttributes registers keeper's search attributes on the
// namespace when they are missing. Clusters that refuse (Temporal Cloud
// manages them through its own API) get a warning: workflows then start
// without them.
func EnsureSearchAttributes(ctx context.Context, c client.Client, namespace string, log *slog.Logger) error {
	have, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return err
	}
	missing := map[string]enums.IndexedValueType{}
	for name, t := range SearchAttributes {
		if _, ok := have.GetCustomAttributes()[name]; !ok {
			missing[name] = t
		}
	}
	if len(missing) == 0 {
		return nil
	}
	_, err = c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{Namespace: namespace, SearchAttributes: missing})
	var exists *serviceerror.AlreadyExists
	if err != nil && !errors.As(err, &exists) {
		log.Warn("could not register keeper's search attributes; register them on the namespace by hand", "attributes", missing, "error", err)
		return err
	}
	return nil
}

// Package webhook is keeper's webhook feature (docs/webhooks.md): the
// /v1/webhooks routes (subscriptions, their deliveries, the re-drive of a
// failed one), the dispatcher that hands each recorded delivery to Temporal
// as a DeliverWebhook workflow, the activities that post and record each
// attempt, and the worker that runs them on the webhook task queue.
//
// Deliveries are recorded by the store, in the same transaction as the
// state change they tell of (another feature's); the workflow is in
// internal/workflows, which calls the activities by their registered names
// (workflows.SendWebhookActivity, workflows.FailWebhookDeliveryActivity).
// How a post is signed is internal/webhooksign's.
package webhook

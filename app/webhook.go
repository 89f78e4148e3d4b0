package app

import (
	"fmt"
	"net/http"

	"github.com/keeperhq/keeper/activities"
	"github.com/keeperhq/keeper/config"
	"github.com/keeperhq/keeper/dispatch"
	"github.com/keeperhq/keeper/worker"
	"github.com/keeperhq/keeper/workflows"
)

// WebhookPolicy is the delivery retry schedule the configuration asks for.
func WebhookPolicy(cfg config.Config) workflows.WebhookPolicy {
	w := cfg.Webhook
	return workflows.WebhookPolicy{RetryFor: w.RetryFor, RetryBase: w.RetryBase, RetryCap: w.RetryCap, AttemptTimeout: 2 * w.Timeout}
}

// startWebhookWorker runs the webhook delivery worker. Endpoints are URLs
// callers hand keeper: deliveries go through the outbound policy's client,
// which checks every connection and follows no redirect.
func (n *Node) startWebhookWorker() error {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.ResponseHeaderTimeout = n.Cfg.Webhook.Timeout
	transport.TLSHandshakeTimeout = n.Cfg.Webhook.Timeout
	acts := &activities.Webhook{
		Store: n.Store, Client: n.Cfg.Outbound().Client(transport), DisableAfter: n.Cfg.Webhook.DisableAfter, Timeout: n.Cfg.Webhook.Timeout,
		Logger: n.Logger, Metrics: n.webhookMetrics,
	}
	n.webhookWorker = worker.NewWebhook(n.Client, acts, worker.Options{ActivityWorkers: n.Cfg.ActivityWorkers, DrainTimeout: n.Cfg.DrainTimeout, Versioning: Versioning(n.Cfg)})
	if err := n.webhookWorker.Start(); err != nil {
		return fmt.Errorf("start webhook worker: %w", err)
	}
	return nil
}

// webhookDispatcher starts a delivery workflow for each recorded delivery.
func (n *Node) webhookDispatcher() *dispatch.Webhooks {
	return &dispatch.Webhooks{Store: n.Store, Temporal: n.Client, Policy: WebhookPolicy(n.Cfg), Sweep: n.Cfg.PollInterval, Logger: n.Logger}
}

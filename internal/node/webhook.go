package node

import (
	"fmt"
	"net/http"

	"github.com/keeperhq/keeper/internal/config"
	"github.com/keeperhq/keeper/internal/telemetry"
	"github.com/keeperhq/keeper/internal/webhook"
	"github.com/keeperhq/keeper/internal/workflows"
)

// WebhookPolicy is the delivery retry schedule the configuration asks for.
func WebhookPolicy(cfg config.Config) workflows.WebhookPolicy {
	w := cfg.Webhook
	return workflows.WebhookPolicy{RetryFor: w.RetryWindow, RetryBase: w.RetryBase, RetryCap: w.RetryCap, AttemptTimeout: 2 * w.Timeout}
}

// startWebhookWorker runs the webhook delivery worker. Endpoints are URLs
// callers hand keeper: deliveries go through the outbound policy's client,
// which checks every connection and follows no redirect; each post is a
// client span under its SendWebhook activity.
func (n *Node) startWebhookWorker() error {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.ResponseHeaderTimeout = n.Cfg.Webhook.Timeout
	transport.TLSHandshakeTimeout = n.Cfg.Webhook.Timeout
	client := n.Cfg.Outbound().Client(transport)
	client.Transport = telemetry.Outgoing("webhook", client.Transport)
	acts := &webhook.Activities{
		Store: n.Store, Client: client, DisableAfter: n.Cfg.Webhook.DisableAfter, Timeout: n.Cfg.Webhook.Timeout,
		Schedule: workflows.WebhookSchedule{Base: n.Cfg.Webhook.RetryBase, Cap: n.Cfg.Webhook.RetryCap},
		Logger:   n.Logger, Metrics: n.webhookMetrics,
	}
	n.webhookWorker = webhook.NewWorker(n.Client, acts, n.workerOptions(n.Cfg.ActivityWorkers))
	if err := n.webhookWorker.Start(); err != nil {
		return fmt.Errorf("start webhook worker: %w", err)
	}
	return nil
}

// webhookDispatcher starts a delivery workflow for each recorded delivery.
func (n *Node) webhookDispatcher() *webhook.Dispatcher {
	return &webhook.Dispatcher{Store: n.Store, Temporal: n.Client, Policy: WebhookPolicy(n.Cfg), Sweep: n.Cfg.PollInterval, Logger: n.Logger}
}

// webhookHTTP serves the webhook routes on the API.
func (n *Node) webhookHTTP() *webhook.HTTP {
	return &webhook.HTTP{
		Store: n.Store, Logger: n.Logger, Outbound: n.Cfg.Outbound(), RotationGrace: n.Cfg.Webhook.RotationGrace,
		MaxBodyBytes: n.Cfg.MaxBodyBytes,
	}
}

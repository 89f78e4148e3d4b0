// Package deploy holds no code: its tests check the deployment files, the
// Kubernetes example in deploy/k8s and docker-compose.yml, offline
// (docs/production.md).
package deploy

package config

import (
	"fmt"
	"os"
	"strings"
	"time"
)

// HTTPConfig is the API server's connection timeouts (5 s read, 5 s write,
// 60 s idle by default: a client that stalls mid-request or mid-answer
// frees its connection within seconds; docs/api.md). LongRequest replaces read and write for the routes
// that may move megabytes in one request (starter's longRoutes).
type HTTPConfig struct {
	ReadTimeout  time.Duration
	WriteTimeout time.Duration
	IdleTimeout  time.Duration
	LongRequest  time.Duration
}

// DefaultWorkerHealthAddr is where `keeper worker` serves /health and
// /readyz unless KEEPER_HEALTH_ADDR says otherwise: the API's default
// address, so one probe address fits a node of either kind.
const DefaultWorkerHealthAddr = "127.0.0.1:8081"

// HealthAddrFor is where a process serves /health and /readyz beside its
// API, if any: KEEPER_HEALTH_ADDR when set, else DefaultWorkerHealthAddr
// for a process without the API; "" when the API's address serves them
// alone.
func (c *Config) HealthAddrFor(hasAPI bool) string {
	switch {
	case c.HealthAddr != "" && (!hasAPI || c.HealthAddr != c.HTTPAddr):
		return c.HealthAddr
	case hasAPI:
		return ""
	}
	return DefaultWorkerHealthAddr
}

// Token returns the API token from KEEPER_API_TOKEN or KEEPER_API_TOKEN_FILE.
// Errors never contain the token.
func (c *Config) Token() (string, error) {
	if c.APIToken != "" {
		return c.APIToken, nil
	}
	if c.APITokenFile == "" {
		return "", nil
	}
	b, err := os.ReadFile(c.APITokenFile)
	if err != nil {
		return "", fmt.Errorf("KEEPER_API_TOKEN_FILE: cannot read %s", c.APITokenFile)
	}
	t := strings.TrimSpace(string(b))
	if t == "" {
		return "", fmt.Errorf("KEEPER_API_TOKEN_FILE: %s is empty", c.APITokenFile)
	}
	return t, nil
}

// serverKnobs are the settings of the process itself: where keeper keeps
// its records, where it serves, how it logs, how it stops.
func (c *Config) serverKnobs() []Knob {
	return []Knob{
		{"data-dir", "KEEPER_DATA_DIR", "./.keeper", Base,
			"directory of keeper.db (keeper's records, unless KEEPER_STORE_URL is set) and, for " +
				"`keeper dev`, temporal.db",
			&c.DataDir},
		{"store-url", "KEEPER_STORE_URL", "", Store,
			"keeper's records in PostgreSQL instead, shared by every node given the same URL: " +
				"postgres://user:password@host:5432/database?sslmode=require (search_path=… picks a schema); " +
				"empty: SQLite keeper.db in the data directory",
			&c.StoreURL},
		{"http-addr", "KEEPER_HTTP_ADDR", "127.0.0.1:8081", API,
			"address of the HTTP API, /health, /readyz and /metrics",
			&c.HTTPAddr},
		{"metrics-addr", "KEEPER_METRICS_ADDR", "", Node,
			"also serve /metrics, /health and /readyz on this address, e.g. 127.0.0.1:9464 to keep scrapes " +
				"off the API's address; empty: not",
			&c.MetricsAddr},
		{"health-addr", "KEEPER_HEALTH_ADDR", "", Node,
			"where `keeper worker`, which has no API, serves /health, /readyz and /metrics (ready while it " +
				"polls its task queues: its Temporal workers started and the server answers, and its store and " +
				"chains answer); empty: " + DefaultWorkerHealthAddr +
				", which is also the API's default: a worker beside `keeper api` on one host needs another. " +
				"`keeper api` and `keeper dev` serve them on KEEPER_HTTP_ADDR, and here too when set to " +
				"another address",
			&c.HealthAddr},
		{"log-level", "KEEPER_LOG_LEVEL", "info", Base,
			"debug, info, warn or error",
			&c.LogLevel},
		{"log-format", "KEEPER_LOG_FORMAT", "", Base,
			"json or text; empty: text for `keeper dev` and the other local tools, json for " +
				"`keeper worker` and `keeper api`",
			&c.LogFormat},
		{"drain-timeout", "KEEPER_DRAIN_TIMEOUT", "10s", Node,
			"on SIGINT/SIGTERM, how long in-flight activities may finish",
			&c.DrainTimeout},
		{"activity-workers", "KEEPER_ACTIVITY_WORKERS", "64", Worker,
			"concurrent activities per worker process (the anchoring worker's local activities, submit and " +
				"record, under the same limit counted apart)",
			&c.ActivityWorkers},
	}
}

// httpKnobs are the settings of the API server's connections.
func (c *Config) httpKnobs() []Knob {
	return []Knob{
		{"http-read-timeout", "KEEPER_HTTP_READ_TIMEOUT", "5s", API,
			"API server: longest time to read a request, headers and body (the routes of " +
				"KEEPER_HTTP_LONG_TIMEOUT excepted)",
			&c.HTTP.ReadTimeout},
		{"http-write-timeout", "KEEPER_HTTP_WRITE_TIMEOUT", "5s", API,
			"API server: longest time from a request's headers to the end of its answer (the routes of " +
				"KEEPER_HTTP_LONG_TIMEOUT excepted)",
			&c.HTTP.WriteTimeout},
		{"http-idle-timeout", "KEEPER_HTTP_IDLE_TIMEOUT", "60s", API,
			"API server: a keep-alive connection with no request for this long is closed",
			&c.HTTP.IdleTimeout},
		{"http-long-timeout", "KEEPER_HTTP_LONG_TIMEOUT", "60s", API,
			"API server: read and write time of the routes that may move megabytes in one request instead " +
				"of the two above: `POST /v1/evidence/batch`, `/v1/evidence` (pages of 1,000), transfers and " +
				"ledger-intent pages, `/codec`, `/metrics`",
			&c.HTTP.LongRequest},
	}
}

// accessKnobs are the settings of who may call the API and read Temporal's
// payloads: the token, the route limits, the payload codec.
func (c *Config) accessKnobs() []Knob {
	return []Knob{
		{"api-token", "KEEPER_API_TOKEN", "", Node,
			"when set, /v1, /rewarder, /ledger and /codec routes need `Authorization: Bearer <token>` " +
				"(compared in constant time)",
			&c.APIToken},
		{"api-token-file", "KEEPER_API_TOKEN_FILE", "", Node,
			"file holding the API token (instead of KEEPER_API_TOKEN)",
			&c.APITokenFile},
		{"metrics-open", "KEEPER_METRICS_OPEN", "true", Node,
			"serve /metrics without the API token",
			&c.MetricsOpen},
		{"max-in-flight", "KEEPER_MAX_IN_FLIGHT", "256", API,
			"concurrent requests per route group; beyond it 503 busy at once",
			&c.MaxInFlight},
		{"codec-key-file", "KEEPER_CODEC_KEY_FILE", "", Node,
			"file of AES-256-GCM keys, one `<key-id> <base64 of 32 bytes>` per line: every Temporal " +
				"payload keeper writes is encrypted with the first key and read with any, and the API serves " +
				"/codec so the Web UI and the temporal CLI can show them. Every worker and API node needs the " +
				"same file; empty: payloads are plain",
			&c.CodecKeyFile},
		{"codec-cors-origins", "KEEPER_CODEC_CORS_ORIGINS", "", API,
			"Web UI origins (comma-separated, e.g. https://temporal.example) whose pages may call /codec; " +
				"`keeper dev` adds its own UI",
			&c.CodecCORSOrigins},
	}
}

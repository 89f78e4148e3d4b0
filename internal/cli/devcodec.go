package cli

import (
	"log/slog"
	"net"
	"net/url"

	"github.com/keeperhq/keeper/internal/config"
)

// DevCodecEndpoint is the /codec URL a browser on this machine reaches the
// API at ("" without a key file: there is nothing to decode).
func DevCodecEndpoint(cfg config.Config) string {
	if cfg.CodecKeyFile == "" {
		return ""
	}
	host, port, err := net.SplitHostPort(cfg.HTTPAddr)
	if err != nil {
		return ""
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/codec"
}

// AllowDevUI lets the embedded Web UI call /codec, opened as 127.0.0.1 or
// as localhost, and says when it cannot: the UI only forwards the access
// token of its own login, never KEEPER_API_TOKEN.
func AllowDevUI(cfg *config.Config, uiAddr string, log *slog.Logger) {
	if cfg.CodecKeyFile == "" || uiAddr == "" {
		return
	}
	cfg.CodecCORSOrigins = append(cfg.CodecCORSOrigins, uiAddr)
	if u, err := url.Parse(uiAddr); err == nil && net.ParseIP(u.Hostname()).IsLoopback() {
		cfg.CodecCORSOrigins = append(cfg.CodecCORSOrigins, "http://"+net.JoinHostPort("localhost", u.Port()))
	}
	if token, _ := cfg.Token(); token != "" {
		log.Warn("the Web UI cannot send KEEPER_API_TOKEN to /codec, so it shows payloads encrypted; decode with the temporal CLI: --codec-endpoint " + DevCodecEndpoint(*cfg) + " --codec-auth 'Bearer <token>'")
	}
}

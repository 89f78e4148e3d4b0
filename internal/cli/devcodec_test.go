package cli_test

import (
	"bytes"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/keeperhq/keeper/internal/cli"
	"github.com/keeperhq/keeper/internal/config"
)

func TestTheDevUIsCodecEndpointIsTheAPIAsABrowserHereReachesIt(t *testing.T) {
	cfg := config.Default()
	assert.Empty(t, cli.DevCodecEndpoint(cfg), "no key file, nothing to decode")

	cfg.CodecKeyFile = "keys"
	for addr, want := range map[string]string{
		"127.0.0.1:8081": "http://127.0.0.1:8081/codec",
		"0.0.0.0:9000":   "http://127.0.0.1:9000/codec",
		":8081":          "http://127.0.0.1:8081/codec",
		"[::]:8081":      "http://127.0.0.1:8081/codec",
		"[::1]:8081":     "http://[::1]:8081/codec",
	} {
		cfg.HTTPAddr = addr
		assert.Equal(t, want, cli.DevCodecEndpoint(cfg), addr)
	}
}

func TestTheDevUIMayCallTheCodecOpenedAsLocalhostOr127001(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	cfg := config.Default()
	cfg.CodecKeyFile = "keys"
	cfg.CodecCORSOrigins = []string{"https://temporal.example"}
	cli.AllowDevUI(&cfg, "http://127.0.0.1:8233", log)
	assert.Equal(t, []string{"https://temporal.example", "http://127.0.0.1:8233", "http://localhost:8233"}, cfg.CodecCORSOrigins)
	assert.Empty(t, logs.String())

	cfg.APIToken = "tok-" + "0123456789abcdef"
	cli.AllowDevUI(&cfg, "http://127.0.0.1:8233", log)
	assert.Contains(t, logs.String(), "cannot send KEEPER_API_TOKEN")
	assert.NotContains(t, logs.String(), cfg.APIToken)
}

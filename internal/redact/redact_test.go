package redact_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/keeperhq/keeper/internal/redact"
)

func TestURLMasksPasswordsAndSecretParametersAndKeepsTheRest(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://keeper:pw-never-shown@127.0.0.1:1/keeper?connect_timeout=2":     "postgres://keeper:xxxxx@127.0.0.1:1/keeper?connect_timeout=2",
		"postgres://keeper@127.0.0.1:1/keeper?connect_timeout=2&password=pw":        "postgres://keeper@127.0.0.1:1/keeper?connect_timeout=2&password=xxxxx",
		"postgres://keeper:pw@127.0.0.1:5432/keeper?sslmode=require&sslpassword=pw": "postgres://keeper:xxxxx@127.0.0.1:5432/keeper?sslmode=require&sslpassword=xxxxx",
		"https://rpc.example.com/v1?API-KEY=k1&token=k2&chain=1":                    "https://rpc.example.com/v1?API-KEY=xxxxx&chain=1&token=xxxxx",
		"postgres://keeper@localhost/keeper?sslmode=disable":                        "postgres://keeper@localhost/keeper?sslmode=disable",
		"postgresql://keeper:pw@[::1:5432/keeper":                                   "(unparsable URL)",
	} {
		assert.Equal(t, want, redact.URL(in), in)
	}
}

func TestEndpointShowsOnlySchemeAndHost(t *testing.T) {
	for in, want := range map[string]string{
		"https://user:pw@rpc.example.com/v2/KEY123?api-key=KEY456": "https://rpc.example.com/…",
		"https://rpc.example.com/v2/KEY123":                        "https://rpc.example.com/…",
		"https://rpc.example.com?api-key=KEY":                      "https://rpc.example.com/…",
		"https://user:KEY@rpc.example.com":                         "https://rpc.example.com/…",
		"https://rpc.example.com#KEY":                              "https://rpc.example.com/…",
		"https://rpc.example.com/":                                 "https://rpc.example.com/…",
		"http://127.0.0.1:8545":                                    "http://127.0.0.1:8545",
		"":                                                         "",
		"localhost:8545/KEY":                                       "[endpoint]",
		"http://[::1/KEY":                                          "[endpoint]",
	} {
		assert.Equal(t, want, redact.Endpoint(in), in)
	}
}

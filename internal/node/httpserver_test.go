package node

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/keeperhq/keeper/internal/config"
)

func TestTheAPIServerUsesTheConfiguredTimeouts(t *testing.T) {
	srv := apiServer(config.Default().HTTP, http.NotFoundHandler())
	assert.Equal(t, 5*time.Second, srv.ReadTimeout)
	assert.Equal(t, 5*time.Second, srv.WriteTimeout)
	assert.Equal(t, 60*time.Second, srv.IdleTimeout)
	assert.Equal(t, 5*time.Second, srv.ReadHeaderTimeout)

	srv = apiServer(config.HTTPConfig{ReadTimeout: 2 * time.Second, WriteTimeout: 8 * time.Second, IdleTimeout: time.Minute, LongRequest: time.Hour}, http.NotFoundHandler())
	assert.Equal(t, 2*time.Second, srv.ReadTimeout)
	assert.Equal(t, 2*time.Second, srv.ReadHeaderTimeout, "headers are never given longer than the whole request")
	assert.Equal(t, 8*time.Second, srv.WriteTimeout)
}

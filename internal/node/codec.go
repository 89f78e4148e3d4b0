package node

import (
	"go.temporal.io/sdk/client"

	"github.com/keeperhq/keeper/internal/codec"
	"github.com/keeperhq/keeper/internal/starter"
)

// withCodec loads KEEPER_CODEC_KEY_FILE, when set, and wraps co's data
// converter in it, so the node's client, workers and API all read and write
// encrypted payloads. The codec is kept for the API's /codec routes.
func (n *Node) withCodec(co client.Options) (client.Options, error) {
	if n.Cfg.CodecKeyFile == "" {
		return co, nil
	}
	c, err := codec.LoadFile(n.Cfg.CodecKeyFile)
	if err != nil {
		return co, err
	}
	n.codec = c
	n.Logger.Info("Temporal payloads are encrypted", "key", c.EncryptKeyID())
	return c.ClientOptions(co), nil
}

// codecAPI is what the API serves under /codec (nothing without a key file).
func (n *Node) codecAPI() starter.CodecOptions {
	if n.codec == nil {
		return starter.CodecOptions{}
	}
	return starter.CodecOptions{Handler: n.codec.Handler(), AllowOrigins: n.Cfg.CodecCORSOrigins}
}

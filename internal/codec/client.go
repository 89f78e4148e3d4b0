package codec

import (
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
)

// ClientOptions returns co with c wrapped around its data converter (the
// SDK's default when it has none), so every payload the client and its
// workers write is encrypted and every one they read is decrypted. Failure
// messages and stack traces are moved into an encrypted payload too: errors
// carry inputs (addresses, URLs) that are as private as the payloads.
//
// A worker or client without the codec cannot read what one with it wrote:
// every keeper process on a namespace needs the same key file.
func (c *Codec) ClientOptions(co client.Options) client.Options {
	base := co.DataConverter
	if base == nil {
		base = converter.GetDefaultDataConverter()
	}
	co.DataConverter = converter.NewCodecDataConverter(base, c)
	co.FailureConverter = temporal.NewDefaultFailureConverter(temporal.DefaultFailureConverterOptions{
		DataConverter:          co.DataConverter,
		EncodeCommonAttributes: true,
	})
	return co
}

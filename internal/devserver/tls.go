package devserver

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"

	"go.temporal.io/server/common/config"
)

// tlsEnabled reports whether the frontend serves TLS.
func (o *Options) tlsEnabled() bool { return o.TLSCertFile != "" }

// checkTLS loads the certificate, key and client CA once before the server
// starts: the server reads them only when the frontend starts, and exits
// the process on an error there.
func (o *Options) checkTLS() error {
	if o.TLSCertFile == "" && o.TLSKeyFile == "" {
		if o.TLSClientCAFile != "" {
			return errors.New("devserver: a TLS client CA needs a TLS certificate and key")
		}
		return nil
	}
	if o.TLSCertFile == "" || o.TLSKeyFile == "" {
		return errors.New("devserver: TLS needs both a certificate and a key file")
	}
	// The error names the files, never their contents.
	if _, err := tls.LoadX509KeyPair(o.TLSCertFile, o.TLSKeyFile); err != nil {
		return fmt.Errorf("devserver: TLS certificate %s with key %s: %w", o.TLSCertFile, o.TLSKeyFile, err)
	}
	if o.TLSClientCAFile != "" {
		pem, err := os.ReadFile(o.TLSClientCAFile)
		if err != nil {
			return fmt.Errorf("devserver: TLS client CA: %w", err)
		}
		if !x509.NewCertPool().AppendCertsFromPEM(pem) {
			return fmt.Errorf("devserver: TLS client CA %s holds no PEM certificate", o.TLSClientCAFile)
		}
	}
	return nil
}

// frontendTLS is the frontend's TLS config. Internal traffic (history,
// matching, the server's own system workers, and this package's readiness
// checks and UI) stays on loopback in plaintext and reaches the frontend
// API through the internal frontend, which is what lets mTLS be required of
// every outside client: the server holds no client certificate of its own.
func frontendTLS(o Options) config.RootTLS {
	var t config.RootTLS
	t.Frontend.Server = config.ServerTLS{
		CertFile: o.TLSCertFile,
		KeyFile:  o.TLSKeyFile,
	}
	if o.TLSClientCAFile != "" {
		t.Frontend.Server.ClientCAFiles = []string{o.TLSClientCAFile}
		t.Frontend.Server.RequireClientAuth = true
	}
	return t
}

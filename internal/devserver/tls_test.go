package devserver

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTLSSettingsAreCheckedBeforeTheServerStarts(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "not.pem")
	require.NoError(t, os.WriteFile(notPEM, []byte("not a certificate"), 0o600))
	missing := filepath.Join(dir, "missing.pem")

	for _, c := range []struct {
		name string
		o    Options
		want string
	}{
		{"a certificate without a key", Options{TLSCertFile: notPEM}, "both a certificate and a key"},
		{"a key without a certificate", Options{TLSKeyFile: notPEM}, "both a certificate and a key"},
		{"a client CA without a certificate", Options{TLSClientCAFile: notPEM}, "needs a TLS certificate"},
		{"files that hold no certificate", Options{TLSCertFile: notPEM, TLSKeyFile: notPEM}, notPEM},
		{"missing files", Options{TLSCertFile: missing, TLSKeyFile: missing}, missing},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := Start(context.Background(), c.o)
			require.Error(t, err)
			assert.Nil(t, s)
			assert.Contains(t, err.Error(), c.want)
		})
	}
}

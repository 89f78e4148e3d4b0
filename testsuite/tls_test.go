package testsuite

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"log/slog"
	"maps"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/contrib/envconfig"
	sdklog "go.temporal.io/sdk/log"
)

// testPKI is a throwaway CA with a server and a client certificate, as PEM
// files in a directory.
type testPKI struct {
	caCert, serverCert, serverKey, clientCert, clientKey string
}

func newTestPKI(t *testing.T) testPKI {
	t.Helper()
	dir := t.TempDir()
	write := func(name, typ string, der []byte) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600))
		return path
	}
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		require.NoError(t, err)
		return k
	}
	writeKey := func(name string, k *ecdsa.PrivateKey) string {
		der, err := x509.MarshalPKCS8PrivateKey(k)
		require.NoError(t, err)
		return write(name, "PRIVATE KEY", der)
	}
	serial := int64(0)
	template := func(cn string) *x509.Certificate {
		serial++
		return &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      pkix.Name{CommonName: cn},
			NotBefore:    time.Now().Add(-time.Hour),
			NotAfter:     time.Now().Add(time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
		}
	}

	caKey := newKey()
	caTmpl := template("keeper test CA")
	caTmpl.IsCA, caTmpl.BasicConstraintsValid = true, true
	caTmpl.KeyUsage |= x509.KeyUsageCertSign
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	require.NoError(t, err)
	ca, err := x509.ParseCertificate(caDER)
	require.NoError(t, err)

	issue := func(name string, tmpl *x509.Certificate) (certPath, keyPath string) {
		k := newKey()
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &k.PublicKey, caKey)
		require.NoError(t, err)
		return write(name+".pem", "CERTIFICATE", der), writeKey(name+".key", k)
	}
	srv := template("localhost")
	srv.DNSNames, srv.IPAddresses = []string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1)}
	srv.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	cli := template("keeper-node")
	cli.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}

	p := testPKI{caCert: write("ca.pem", "CERTIFICATE", caDER)}
	p.serverCert, p.serverKey = issue("server", srv)
	p.clientCert, p.clientKey = issue("client", cli)
	return p
}

// envLookup serves envconfig from a map instead of the process environment.
type envLookup map[string]string

func (e envLookup) Environ() []string {
	var out []string
	for k, v := range e {
		out = append(out, k+"="+v)
	}
	return out
}

func (e envLookup) LookupEnv(k string) (string, bool) { v, ok := e[k]; return v, ok }

// dialWithEnv connects an SDK client configured the way `keeper worker`
// and `keeper api` are: envconfig over TEMPORAL_* variables, no file.
func dialWithEnv(env map[string]string) error {
	co, err := envconfig.LoadClientOptions(envconfig.LoadClientOptionsRequest{DisableFile: true, EnvLookup: envLookup(env)})
	if err != nil {
		return err
	}
	co.Logger = sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.DialContext(ctx, co)
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.CheckHealth(ctx, &client.CheckHealthRequest{})
	return err
}

// TestWorkerAndAPIConfirmEvidenceThroughAnMTLSDevserverConfiguredOnlyByTemporalEnvironment
// runs `keeper devserver` with TLS and a required client certificate, and
// `keeper worker` and `keeper api` as separate processes that learn how to
// reach it only from the standard TEMPORAL_* variables. Evidence posted to
// the API is confirmed; clients without the CA, or without a client
// certificate, are refused.
func TestWorkerAndAPIConfirmEvidenceThroughAnMTLSDevserverConfiguredOnlyByTemporalEnvironment(t *testing.T) {
	endToEnd(t)
	pki := newTestPKI(t)
	bin := keeperBinary(t)
	work := t.TempDir()
	dir := filepath.Join(work, "data")
	tport, apiPort := freePort(t), freePort(t)
	apiAddr := fmt.Sprintf("127.0.0.1:%d", apiPort)

	temporalEnv := map[string]string{
		"TEMPORAL_ADDRESS":                 fmt.Sprintf("127.0.0.1:%d", tport),
		"TEMPORAL_NAMESPACE":               "default",
		"TEMPORAL_TLS_SERVER_CA_CERT_PATH": pki.caCert,
		"TEMPORAL_TLS_CLIENT_CERT_PATH":    pki.clientCert,
		"TEMPORAL_TLS_CLIENT_KEY_PATH":     pki.clientKey,
		// The certificate names localhost; the address is an IP.
		"TEMPORAL_TLS_SERVER_NAME": "localhost",
		// No ~/.config/temporalio/temporal.toml of the machine's user.
		"TEMPORAL_CONFIG_FILE": filepath.Join(work, "no-temporal.toml"),
	}
	keeperEnv := []string{
		"KEEPER_DATA_DIR=" + dir, "KEEPER_LOG_LEVEL=warn", "KEEPER_CHAINS=stub",
		"KEEPER_HTTP_ADDR=" + apiAddr, "KEEPER_STUB_CONFIRM_MS=200", "KEEPER_CONFIRM_POLL_MS=200",
		"KEEPER_POLL_MS=500", "KEEPER_DRAIN_TIMEOUT=1s",
	}
	nodeEnv := append([]string{}, keeperEnv...)
	for k, v := range temporalEnv {
		nodeEnv = append(nodeEnv, k+"="+v)
	}
	logf := func(name string) *os.File { return procLog(t, work, name) }
	server := &proc{name: "devserver", args: []string{"devserver"}, log: logf("devserver"), env: append([]string{
		fmt.Sprintf("KEEPER_DEV_TEMPORAL_PORT=%d", tport), "KEEPER_DEV_UI_PORT=0",
		"KEEPER_DEV_TLS_CERT=" + pki.serverCert, "KEEPER_DEV_TLS_KEY=" + pki.serverKey, "KEEPER_DEV_TLS_CLIENT_CA=" + pki.caCert,
	}, keeperEnv...)}
	api := &proc{name: "api", args: []string{"api"}, env: nodeEnv, log: logf("api")}
	wrk := &proc{name: "worker", args: []string{"worker"}, env: append([]string{fmt.Sprintf("KEEPER_HEALTH_ADDR=127.0.0.1:%d", freePort(t))}, nodeEnv...), log: logf("worker")}
	all := []*proc{server, api, wrk}
	killAtCleanup(t, all...)

	begin := time.Now()
	server.start(t, bin)
	waitPort(t, tport, 2*time.Minute)
	require.Eventually(t, func() bool { return dialWithEnv(temporalEnv) == nil }, 2*time.Minute, 200*time.Millisecond,
		"an SDK client with the CA and a client certificate reaches the server")
	t.Logf("devserver with mTLS ready in %v", time.Since(begin).Round(time.Millisecond))

	t.Run("a client without the CA is refused", func(t *testing.T) {
		env := maps.Clone(temporalEnv)
		delete(env, "TEMPORAL_TLS_SERVER_CA_CERT_PATH")
		err := dialWithEnv(env)
		require.Error(t, err)
		t.Log(err)
		assert.Contains(t, err.Error(), "certificate")
	})
	t.Run("a client without a client certificate is refused", func(t *testing.T) {
		env := maps.Clone(temporalEnv)
		delete(env, "TEMPORAL_TLS_CLIENT_CERT_PATH")
		delete(env, "TEMPORAL_TLS_CLIENT_KEY_PATH")
		err := dialWithEnv(env)
		require.Error(t, err)
		t.Log(err)
	})
	t.Run("a plaintext client is refused", func(t *testing.T) {
		err := dialWithEnv(map[string]string{"TEMPORAL_ADDRESS": temporalEnv["TEMPORAL_ADDRESS"], "TEMPORAL_NAMESPACE": "default"})
		require.Error(t, err)
		t.Log(err)
	})

	api.start(t, bin)
	wrk.start(t, bin)
	waitPort(t, apiPort, time.Minute)
	// /readyz pings Temporal through the API's own (TLS) client.
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + apiAddr + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, time.Minute, 200*time.Millisecond, "the API reaches Temporal over mTLS")

	hc := &http.Client{Timeout: 5 * time.Second}
	code, id, err := post(hc, apiAddr, map[string]any{"digest": digest("tls", 1), "chains": []string{"stub"}})
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, code)
	require.NotEmpty(t, id)

	var status string
	require.Eventually(t, func() bool {
		resp, err := hc.Get("http://" + apiAddr + "/v1/evidence/" + id)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var ev struct{ Status string }
		if json.NewDecoder(resp.Body).Decode(&ev) != nil {
			return false
		}
		status = ev.Status
		return status == "confirmed"
	}, time.Minute, 200*time.Millisecond, "evidence confirmed through a worker on mTLS (last status %q)", status)
	r := receiptFor(t, apiAddr, id)
	require.NotEmpty(t, r.Anchors)
	assert.Equal(t, "stub", r.Anchors[0].Chain)
	t.Logf("evidence confirmed %v after the server started", time.Since(begin).Round(time.Millisecond))

	// Nothing printed the key material.
	for _, p := range all {
		b, err := os.ReadFile(p.log.Name())
		require.NoError(t, err)
		assert.NotContains(t, string(b), "PRIVATE KEY", p.name)
	}
}

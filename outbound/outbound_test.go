package outbound_test

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/outbound"
)

func TestPrivateAddressesAreTheOnesOutsideThePublicInternet(t *testing.T) {
	for _, a := range []string{
		"127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "0.0.0.0", "100.64.0.1",
		"198.18.0.1", "224.0.0.1", "255.255.255.255", "::1", "::", "fc00::1", "fe80::1", "::ffff:127.0.0.1", "::ffff:169.254.169.254",
	} {
		assert.True(t, outbound.Private(netip.MustParseAddr(a)), a)
	}
	for _, a := range []string{"1.1.1.1", "8.8.8.8", "93.184.216.34", "2606:4700:4700::1111", "::ffff:8.8.8.8"} {
		assert.False(t, outbound.Private(netip.MustParseAddr(a)), a)
	}
}

func TestCheckURLRefusesWhatAProductionKeeperMustNotFetch(t *testing.T) {
	strict := outbound.Policy{}
	for _, u := range []string{
		"http://example.com/usage",                  // plain http
		"https://169.254.169.254/latest/meta-data/", // cloud metadata
		"https://127.0.0.1:8080/", "https://[::1]/", "https://10.0.0.5/", "https://[::ffff:192.168.0.1]/",
		"https://localhost/", "https://LOCALHOST./x", "https://api.localhost/",
		"https://user:pw@example.com/", "ftp://example.com/", "file:///etc/passwd", "/relative",
	} {
		err := strict.CheckURL(u)
		require.Error(t, err, u)
		assert.True(t, outbound.IsRefused(err), u)
	}
	assert.NoError(t, strict.CheckURL("https://accounting.example.com/usage?epoch=2026-11"))

	dev := outbound.Policy{AllowPrivate: true}
	for _, u := range []string{"http://127.0.0.1:8080/usage", "https://localhost/", "http://10.0.0.5/"} {
		assert.NoError(t, dev.CheckURL(u), u)
	}
	assert.Error(t, dev.CheckURL("ftp://example.com/"), "other schemes stay refused")
	assert.Error(t, dev.CheckURL("http://user:pw@127.0.0.1/"), "credentials stay refused")
}

// A name is checked where it matters, at connect time after DNS: "localhost"
// handed in through a path CheckURL did not see still cannot reach loopback.
func TestClientRefusesPrivateAddressesAtConnectTimeAndFollowsNoRedirect(t *testing.T) {
	hits := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits++
		http.Redirect(w, r, "https://example.com/elsewhere", http.StatusFound)
	}))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port

	_, err := outbound.Policy{}.Client(http.DefaultTransport.(*http.Transport)).Get(fmt.Sprintf("http://localhost:%d/", port))
	require.Error(t, err)
	assert.True(t, outbound.IsRefused(err), "%v", err)
	assert.Zero(t, hits, "nothing reached the server")

	resp, err := outbound.Policy{AllowPrivate: true}.Client(http.DefaultTransport.(*http.Transport)).Get(srv.URL)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusFound, resp.StatusCode, "the redirect is answered, not followed")
	assert.Equal(t, 1, hits)
}

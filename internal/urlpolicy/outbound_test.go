package urlpolicy_test

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/urlpolicy"
)

// Every address form of docs/production.md (URLs keeper fetches for
// callers), and their public neighbours, as URLs a caller hands keeper with
// KEEPER_WEBHOOK_ALLOW_PRIVATE=false. A refused
// literal address is refused the same way at connect time (CheckAddr).
func TestTheOutboundPolicyJudgesEveryAddressFormByWhereItLeads(t *testing.T) {
	rows := []struct {
		url     string
		allowed bool
		reason  string // part of the refusal's reason
	}{
		// IPv4 special-purpose ranges.
		{"https://127.0.0.1/", false, "127.0.0.0/8"},
		{"https://10.1.2.3/", false, "10.0.0.0/8"},
		{"https://172.16.0.1/", false, "172.16.0.0/12"},
		{"https://192.168.1.1/", false, "192.168.0.0/16"},
		{"https://100.64.0.1/", false, "100.64.0.0/10"},
		{"https://198.18.0.1/", false, "198.18.0.0/15"},
		{"https://169.254.169.254/latest/meta-data/", false, "169.254.0.0/16"},
		{"https://0.0.0.0/", false, "0.0.0.0/8"},
		{"https://0.1.2.3/", false, "0.0.0.0/8"},
		{"https://240.0.0.1/", false, "240.0.0.0/4"},
		{"https://255.255.255.255/", false, "240.0.0.0/4"},
		{"https://224.0.0.1/", false, "224.0.0.0/4"},
		{"https://192.0.2.1/", false, "192.0.2.0/24"},
		{"https://198.51.100.7/", false, "198.51.100.0/24"},
		{"https://203.0.113.9/", false, "203.0.113.0/24"},
		// IPv6 outside the public unicast range or special there.
		{"https://[::1]/", false, "loopback or unspecified"},
		{"https://[::]/", false, "loopback or unspecified"},
		{"https://[fd00:ec2::254]/", false, "outside 2000::/3"},
		{"https://[fc00::1]/", false, "outside 2000::/3"},
		{"https://[fe80::1]/", false, "outside 2000::/3"},
		{"https://[fe80::1%25eth0]/", false, "scoped address"},
		{"https://[fec0::1]/", false, "outside 2000::/3"},
		{"https://[ff02::1]/", false, "outside 2000::/3"},
		{"https://[ff0e::1]/", false, "outside 2000::/3"},
		{"https://[100::1]/", false, "outside 2000::/3"},
		{"https://[2001:db8::1]/", false, "2001:db8::/32"},
		{"https://[3fff::1]/", false, "3fff::/20"},
		{"https://[2001:10::1]/", false, "2001::/23"},
		{"https://[::ffff:0:7f00:1]/", false, "outside 2000::/3"}, // IPv4-translated (SIIT)
		// IPv4-mapped: the IPv4 address decides.
		{"https://[::ffff:127.0.0.1]/", false, "IPv4-mapped address of 127.0.0.1"},
		{"https://[::ffff:a9fe:a9fe]/", false, "IPv4-mapped address of 169.254.169.254"},
		{"https://[::ffff:8.8.8.8]/", true, ""},
		// NAT64 (well-known prefix): the IPv4 address decides.
		{"https://[64:ff9b::a9fe:a9fe]/", false, "NAT64 address of 169.254.169.254"},
		{"https://[64:ff9b::7f00:1]/", false, "NAT64 address of 127.0.0.1"},
		{"https://[64:ff9b::10.0.0.1]/", false, "NAT64 address of 10.0.0.1"},
		{"https://[64:ff9b::ffff:ffff]/", false, "NAT64 address of 255.255.255.255"},
		{"https://[64:ff9b::808:808]/", true, ""},
		{"https://[64:ff9b::1.1.1.1]/", true, ""},
		// Local-use NAT64: refused whatever it carries.
		{"https://[64:ff9b:1::a9fe:a9fe]/", false, "local-use NAT64"},
		{"https://[64:ff9b:1:808:8:800::]/", false, "local-use NAT64"},
		// 6to4: the IPv4 address in bits 16–47 decides.
		{"https://[2002:a9fe:a9fe::1]/", false, "6to4 address of 169.254.169.254"},
		{"https://[2002:7f00:1::1]/", false, "6to4 address of 127.0.0.1"},
		{"https://[2002:c0a8:101::1]/", false, "6to4 address of 192.168.1.1"},
		{"https://[2002:c058:6301::1]/", false, "6to4 address of 192.88.99.1"},
		{"https://[2002:808:808::1]/", true, ""},
		// Teredo: refused whatever it carries.
		{"https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/", false, "Teredo"},
		{"https://[2001::a9fe:a9fe]/", false, "Teredo"},
		// IPv4-compatible (deprecated): refused whatever it carries.
		{"https://[::a9fe:a9fe]/", false, "IPv4-compatible"},
		{"https://[::7f00:1]/", false, "IPv4-compatible"},
		{"https://[::8.8.8.8]/", false, "IPv4-compatible"},
		// IPv4 in another spelling than a dotted quad.
		{"https://127.1/", false, "host 127.1 is an IPv4 address in a non-standard spelling; write it as a dotted quad"},
		{"https://2130706433/", false, "non-standard spelling"},
		{"https://0x7f000001/", false, "non-standard spelling"},
		{"https://0177.0.0.1/", false, "non-standard spelling"},
		{"https://127.0.1/", false, "non-standard spelling"},
		{"https://0x7f.0.0.1/", false, "non-standard spelling"},
		{"https://017700000001/", false, "non-standard spelling"},
		{"https://8.8.8.010/", false, "non-standard spelling"},
		{"https://0X7F000001:8443/", false, "non-standard spelling"},
		{"https://hooks.example.0x1/", false, "non-standard spelling"},
		{"https://１２７.０.０.１/", false, "127.0.0.0/8"}, // full-width digits: the client dials 127.0.0.1
		// Names keeper knows are loopback without asking DNS.
		{"https://localhost/", false, "loopback host"},
		{"https://LOCALHOST./x", false, "loopback host"},
		{"https://api.localhost/", false, "loopback host"},
		{"https://localhost:8443/", false, "loopback host"},
		// Neither https nor a plain URL.
		{"http://example.com/usage", false, "only https://"},
		{"https://user:pw@example.com/", false, "credentials"},
		{"https://user@example.com/", false, "credentials"},
		{"file:///etc/passwd", false, "not an absolute URL"},
		{"gopher://example.com/", false, "scheme \"gopher\""},
		{"ftp://example.com/", false, "scheme \"ftp\""},
		{"/relative", false, "not an absolute URL"},
		// Public destinations.
		{"https://8.8.8.8/", true, ""},
		{"https://1.1.1.1:8443/usage", true, ""},
		{"https://[2606:4700:4700::1111]/", true, ""},
		{"https://accounting.example.com/usage?epoch=2026-11", true, ""},
		{"https://123.example.com/", true, ""},
		{"https://hooks.example.com./", true, ""},
		{"https://0x.example/", true, ""},
	}
	for _, row := range rows {
		t.Run(row.url, func(t *testing.T) {
			err := urlpolicy.Policy{}.CheckURL(row.url)
			if row.allowed {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.True(t, urlpolicy.IsRefused(err), "%v", err)
			assert.Contains(t, err.Error(), row.reason)
		})
	}
}

func TestKeeperDevAllowsPrivateAddressesButNotOddSpellingsOrOtherSchemes(t *testing.T) {
	dev := urlpolicy.Policy{AllowPrivate: true}
	for _, u := range []string{"http://127.0.0.1:8080/usage", "https://localhost/", "http://10.0.0.5/", "http://[::1]:8080/"} {
		assert.NoError(t, dev.CheckURL(u), u)
	}
	assert.Error(t, dev.CheckURL("http://127.1:8080/"), "127.1 means 127.0.0.1 to some resolvers and a name to others")
	assert.Error(t, dev.CheckURL("ftp://example.com/"), "other schemes stay refused")
	assert.Error(t, dev.CheckURL("http://user:pw@127.0.0.1/"), "credentials stay refused")
}

func TestCheckAddrIsThePolicyForAnAddressAtConnectTime(t *testing.T) {
	for _, a := range []string{"127.0.0.1", "::ffff:127.0.0.1", "64:ff9b::a9fe:a9fe", "2002:a9fe:a9fe::1", "::a9fe:a9fe", "fec0::1", "2001::1"} {
		assert.True(t, urlpolicy.IsRefused(urlpolicy.CheckAddr(netip.MustParseAddr(a))), a)
	}
	assert.True(t, urlpolicy.IsRefused(urlpolicy.CheckAddr(netip.Addr{})), "no address is not a public one")
	for _, a := range []string{"8.8.8.8", "64:ff9b::808:808", "2002:808:808::1", "2606:4700:4700::1111"} {
		assert.NoError(t, urlpolicy.CheckAddr(netip.MustParseAddr(a)), a)
	}
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

	_, err := urlpolicy.Policy{}.Client(http.DefaultTransport.(*http.Transport)).Get(fmt.Sprintf("http://localhost:%d/", port))
	require.Error(t, err)
	assert.True(t, urlpolicy.IsRefused(err), "%v", err)
	assert.Zero(t, hits, "nothing reached the server")

	resp, err := urlpolicy.Policy{AllowPrivate: true}.Client(http.DefaultTransport.(*http.Transport)).Get(srv.URL)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusFound, resp.StatusCode, "the redirect is answered, not followed")
	assert.Equal(t, 1, hits)
}

package urlpolicy_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/dns/dnsmessage"

	"github.com/keeperhq/keeper/internal/urlpolicy"
)

// dnsServer is a DNS server on 127.0.0.1 that answers A and AAAA questions
// for its names, as a resolver a caller controls would.
type dnsServer struct {
	names   map[string][]netip.Addr // lower-case name without the root dot
	queries atomic.Int32
}

func startDNS(t *testing.T, names map[string][]netip.Addr) (*dnsServer, *net.Resolver) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { pc.Close() })
	s := &dnsServer{names: names}
	go func() {
		buf := make([]byte, 512)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if answer, err := s.answer(buf[:n]); err == nil {
				_, _ = pc.WriteTo(answer, from)
			}
		}
	}()
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", pc.LocalAddr().String())
	}}
	return s, r
}

func (s *dnsServer) answer(query []byte) ([]byte, error) {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil {
		return nil, err
	}
	q, err := p.Question()
	if err != nil {
		return nil, err
	}
	s.queries.Add(1)
	addrs, known := s.names[strings.TrimSuffix(strings.ToLower(q.Name.String()), ".")]
	rcode := dnsmessage.RCodeSuccess
	if !known {
		rcode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired, RCode: rcode})
	b.EnableCompression()
	if err := b.StartQuestions(); err != nil {
		return nil, err
	}
	if err := b.Question(q); err != nil {
		return nil, err
	}
	if err := b.StartAnswers(); err != nil {
		return nil, err
	}
	rh := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 60}
	for _, a := range addrs {
		switch {
		case q.Type == dnsmessage.TypeA && a.Is4():
			err = b.AResource(rh, dnsmessage.AResource{A: a.As4()})
		case q.Type == dnsmessage.TypeAAAA && a.Is6():
			err = b.AAAAResource(rh, dnsmessage.AAAAResource{AAAA: a.As16()})
		}
		if err != nil {
			return nil, err
		}
	}
	return b.Finish()
}

// acceptCounter is a TCP listener on 127.0.0.1 that counts the connections
// it accepts and closes them.
func acceptCounter(t *testing.T) (port int, accepts *atomic.Int32) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	accepts = new(atomic.Int32)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepts.Add(1)
			c.Close()
		}
	}()
	return l.Addr().(*net.TCPAddr).Port, accepts
}

func get(t *testing.T, p urlpolicy.Policy, url string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	require.NoError(t, err)
	resp, err := p.Client(http.DefaultTransport.(*http.Transport)).Do(req)
	if err == nil {
		resp.Body.Close()
	}
	return err
}

// A name that passes registration (it is not an address) and whose DNS
// answer leads to a non-public address is refused when keeper connects: the
// connection is never opened. The same names do reach the listener when
// private addresses are allowed, so the zero is the policy's doing.
func TestANameThatResolvesToANonPublicAddressFormIsRefusedBeforeTheConnectionOpens(t *testing.T) {
	port, accepts := acceptCounter(t)
	names := map[string][]netip.Addr{
		"a.rebind.test":      {netip.MustParseAddr("127.0.0.1")},
		"mapped.rebind.test": {netip.MustParseAddr("::ffff:127.0.0.1")},
		"nat64.rebind.test":  {netip.MustParseAddr("64:ff9b::a9fe:a9fe")},
		"6to4.rebind.test":   {netip.MustParseAddr("2002:7f00:1::1")},
		"compat.rebind.test": {netip.MustParseAddr("::7f00:1")},
		"both.rebind.test":   {netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("64:ff9b::7f00:1")},
	}
	dns, resolver := startDNS(t, names)
	strict := urlpolicy.Policy{Resolver: resolver}

	for name := range names {
		t.Run(name, func(t *testing.T) {
			url := fmt.Sprintf("https://%s:%d/usage", name, port)
			require.NoError(t, strict.CheckURL(url), "a name passes registration")
			before := dns.queries.Load()
			err := get(t, strict, url)
			require.Error(t, err)
			assert.True(t, urlpolicy.IsRefused(err), "%v", err)
			assert.Contains(t, err.Error(), "at connect time")
			assert.Greater(t, dns.queries.Load(), before, "the name was resolved through the test's DNS server")
			assert.Zero(t, accepts.Load(), "no connection was opened")
		})
	}

	for _, name := range []string{"a.rebind.test", "mapped.rebind.test"} {
		err := get(t, urlpolicy.Policy{AllowPrivate: true, Resolver: resolver}, fmt.Sprintf("https://%s:%d/", name, port))
		assert.False(t, urlpolicy.IsRefused(err), "%v", err)
	}
	assert.EqualValues(t, 2, accepts.Load(), "with private addresses allowed the same answers reach 127.0.0.1")
}

// 0x7f000001 is 127.0.0.1 to glibc's resolver and a name to a DNS one
// (which here answers 127.0.0.1 for it too): keeper refuses the spelling
// at connect time before asking either.
func TestAnIPv4AddressInANonStandardSpellingIsRefusedAtConnectTimeBeforeResolution(t *testing.T) {
	port, accepts := acceptCounter(t)
	loopback := []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	dns, resolver := startDNS(t, map[string][]netip.Addr{"0x7f000001": loopback, "127.1": loopback, "2130706433": loopback})

	for _, host := range []string{"0x7f000001", "127.1", "2130706433"} {
		for _, p := range []urlpolicy.Policy{{Resolver: resolver}, {AllowPrivate: true, Resolver: resolver}} {
			err := get(t, p, fmt.Sprintf("https://%s:%d/", host, port))
			require.Error(t, err, host)
			assert.True(t, urlpolicy.IsRefused(err), "%v", err)
			assert.Contains(t, err.Error(), "non-standard spelling")
		}
	}
	assert.Zero(t, dns.queries.Load(), "nothing was resolved")
	assert.Zero(t, accepts.Load(), "no connection was opened")
}

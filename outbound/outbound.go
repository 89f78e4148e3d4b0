// Package outbound is keeper's one policy for URLs a caller hands it and
// keeper then fetches (an epoch's usage source; webhook endpoints): only
// https, never an address inside the operator's network, and no redirects,
// unless the operator allows private addresses (keeper dev does). A URL is
// checked when it is handed in (a literal address or "localhost") and again
// at every connection, after DNS resolution, so a name that resolves (or is
// rebound) to a private address is refused too.
package outbound

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
)

// Policy is what keeper may fetch on a caller's behalf.
type Policy struct {
	// AllowPrivate permits http:// and loopback, private, link-local and
	// other non-public addresses (KEEPER_WEBHOOK_ALLOW_PRIVATE).
	AllowPrivate bool
}

// RefusedError is a URL or connection the policy refuses.
type RefusedError struct{ Reason string }

func (e *RefusedError) Error() string { return "refused by keeper's outbound URL policy: " + e.Reason }

// IsRefused reports whether err is (or wraps) a refusal by the policy.
func IsRefused(err error) bool {
	var r *RefusedError
	return errors.As(err, &r)
}

// nonPublic are address ranges that are not on the public internet beyond
// what netip's predicates name: shared address space (carrier-grade NAT),
// benchmarking, IETF protocol assignments, documentation and 6to4 relay.
var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("192.0.2.0/24"),
	netip.MustParsePrefix("192.88.99.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("198.51.100.0/24"),
	netip.MustParsePrefix("203.0.113.0/24"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("64:ff9b:1::/48"),
	netip.MustParsePrefix("100::/64"),
	netip.MustParsePrefix("2001:db8::/32"),
}

// Private reports whether ip is not a public internet address: loopback,
// private (RFC 1918, unique local), link-local (cloud metadata services
// live at 169.254.169.254), unspecified, multicast, or another reserved
// range. IPv4-mapped IPv6 addresses are judged as their IPv4 address.
func Private(ip netip.Addr) bool {
	ip = ip.Unmap()
	if !ip.IsValid() || ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified() {
		return true
	}
	for _, p := range nonPublic {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// CheckURL checks a URL as it is handed in: its scheme (https; http too
// when private addresses are allowed), that it carries no credentials, and
// that its host is not a private address literal or a loopback name. Names
// are resolved only when keeper connects (Client), where they are checked
// again.
func (p Policy) CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return &RefusedError{Reason: "not an absolute URL"}
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && p.AllowPrivate:
	case u.Scheme == "http":
		return &RefusedError{Reason: "only https:// URLs are allowed (http:// only where KEEPER_WEBHOOK_ALLOW_PRIVATE=true)"}
	default:
		return &RefusedError{Reason: fmt.Sprintf("scheme %q is not allowed", u.Scheme)}
	}
	if u.User != nil {
		return &RefusedError{Reason: "URLs with credentials are not allowed"}
	}
	if p.AllowPrivate {
		return nil
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return &RefusedError{Reason: "loopback host " + host}
	}
	if ip, err := netip.ParseAddr(host); err == nil && Private(ip) {
		return &RefusedError{Reason: "private, loopback or link-local address " + ip.String()}
	}
	return nil
}

// Transport returns a copy of base whose every connection is checked
// against the policy after DNS resolution, and which uses no proxy (a proxy
// would connect on keeper's behalf, unchecked).
func (p Policy) Transport(base *http.Transport) *http.Transport {
	t := base.Clone()
	t.Proxy = nil
	d := &net.Dialer{Control: p.control}
	t.DialContext = d.DialContext
	return t
}

// Client returns an HTTP client over Transport(base) that follows no
// redirects: a redirect's answer is returned as it is, and callers treat
// it as a failure.
func (p Policy) Client(base *http.Transport) *http.Client {
	return &http.Client{
		Transport:     p.Transport(base),
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// control runs before each connect, with the resolved address.
func (p Policy) control(network, address string, _ syscall.RawConn) error {
	if p.AllowPrivate {
		return nil
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &RefusedError{Reason: "unparsable address " + address}
	}
	if Private(ap.Addr()) {
		return &RefusedError{Reason: "connection to private, loopback or link-local address " + ap.Addr().String()}
	}
	return nil
}

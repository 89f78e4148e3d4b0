// Package urlpolicy is keeper's one policy for URLs a caller hands it and
// keeper then fetches (an epoch's usage source; webhook endpoints): only
// https, never an address inside the operator's network, and no redirects,
// unless the operator allows private addresses (keeper dev does). A URL is
// checked when it is handed in (CheckURL: a literal address or "localhost")
// and again at every connection (Transport), after DNS resolution, so a name
// that resolves (or is rebound) to a private address is refused too. Both
// ask one function, CheckAddr, about an address.
//
// The range tables come from code.dny.dev/ssrf, which generates them from
// IANA's IPv4 and IPv6 special-purpose address registries and is released
// as they change: every IPv4 special-purpose block is refused, and an IPv6
// address must lie in 2000::/3 (global unicast) outside the registry's
// blocks there. That library refuses IPv6 forms that embed an IPv4 address
// (NAT64, 6to4) whole, or lets NAT64 through whole, 64:ff9b::7f00:1 (a way
// to 127.0.0.1) included; so CheckAddr judges those forms itself, by the
// IPv4 address inside: NAT64 (64:ff9b::/96) and 6to4 (2002::/16) of a
// public IPv4 address are public destinations; of any other, refused.
// IPv4-mapped addresses are their IPv4 address. The forms with no
// legitimate public use are refused whatever they embed: IPv4-compatible
// (::/96, deprecated), Teredo (2001::/32, whose client address is
// obfuscated and whose relays are not keeper's to trust), local-use NAT64
// (64:ff9b:1::/48, an operator's own translator) and scoped addresses.
//
// An IPv4 address written other than as a dotted quad of decimals (127.1,
// 2130706433, 0x7f000001, 0177.0.0.1) is refused whatever it would mean:
// resolvers disagree on it (glibc reads 0177 as octal; a DNS resolver may
// look it up as a name), so keeper would not know where it connects.
package urlpolicy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"

	"code.dny.dev/ssrf"
	"golang.org/x/net/idna"
)

// Policy is what keeper may fetch on a caller's behalf.
type Policy struct {
	// AllowPrivate permits http:// and loopback, private, link-local and
	// other non-public addresses (KEEPER_WEBHOOK_ALLOW_PRIVATE).
	AllowPrivate bool
	// Resolver resolves names at connect time; nil is net.DefaultResolver.
	Resolver *net.Resolver
}

// RefusedError is a URL or connection the policy refuses.
type RefusedError struct{ Reason string }

func (e *RefusedError) Error() string { return "refused by keeper's outbound URL policy: " + e.Reason }

// IsRefused reports whether err is (or wraps) a refusal by the policy.
func IsRefused(err error) bool {
	var r *RefusedError
	return errors.As(err, &r)
}

func refused(format string, args ...any) error {
	return &RefusedError{Reason: fmt.Sprintf(format, args...)}
}

// IPv6 forms that carry an IPv4 address.
var (
	nat64        = netip.MustParsePrefix("64:ff9b::/96")   // RFC 6052: IPv4 in the last 32 bits
	nat64Local   = netip.MustParsePrefix("64:ff9b:1::/48") // RFC 8215: an operator's own translator
	sixToFour    = netip.MustParsePrefix("2002::/16")      // RFC 3056: IPv4 in bits 16–47
	teredo       = netip.MustParsePrefix("2001::/32")      // RFC 4380: server IPv4 in bits 32–63, client XOR-ed in the last 32
	v4Compatible = netip.MustParsePrefix("::/96")          // RFC 4291 §2.5.5.1, deprecated
)

// CheckAddr is the policy for one address: nil when keeper may connect to
// it, else a *RefusedError saying why. Refused: loopback, private,
// link-local, shared (carrier-grade NAT), multicast, documentation,
// benchmarking, reserved and every other special-purpose range of IANA's
// registries, in IPv4 or IPv6, and any of those inside an IPv6 form that
// carries an IPv4 address (see the package comment).
func CheckAddr(ip netip.Addr) error {
	if !ip.IsValid() {
		return refused("no address")
	}
	if ip.Zone() != "" {
		return refused("scoped address %s", ip)
	}
	if ip.Is4In6() {
		return checkEmbedded(ip, "IPv4-mapped", ip.Unmap())
	}
	if ip.Is4() {
		return checkIPv4(ip)
	}
	b := ip.As16()
	switch {
	case nat64.Contains(ip):
		return checkEmbedded(ip, "NAT64", netip.AddrFrom4([4]byte(b[12:16])))
	case sixToFour.Contains(ip):
		return checkEmbedded(ip, "6to4", netip.AddrFrom4([4]byte(b[2:6])))
	case nat64Local.Contains(ip):
		return refused("%s is in %s, local-use NAT64 (an operator's own translator), not a public address", ip, nat64Local)
	case teredo.Contains(ip):
		return refused("%s is a Teredo address (%s): refused whatever IPv4 addresses it carries", ip, teredo)
	case ip.IsLoopback(), ip.IsUnspecified():
		return refused("%s is IPv6's loopback or unspecified address, not a public address", ip)
	case v4Compatible.Contains(ip):
		return refused("%s is in %s, IPv4-compatible IPv6 (deprecated), not a public address", ip, v4Compatible)
	case !ssrf.IPv6GlobalUnicast.Contains(ip):
		return refused("%s is outside %s, IPv6 global unicast, so not a public address", ip, ssrf.IPv6GlobalUnicast)
	}
	for _, p := range ssrf.IPv6DeniedPrefixes {
		if p.Contains(ip) {
			return refused("%s is in %s, a special-purpose range, not a public address", ip, p)
		}
	}
	return nil
}

func checkIPv4(ip netip.Addr) error {
	for _, p := range ssrf.IPv4DeniedPrefixes {
		if p.Contains(ip) {
			return refused("%s is in %s, a special-purpose range (loopback, private, link-local, reserved …), not a public address", ip, p)
		}
	}
	return nil
}

func checkEmbedded(ip netip.Addr, form string, v4 netip.Addr) error {
	if err := checkIPv4(v4); err != nil {
		return refused("%s is a %s address of %s, which is not a public address", ip, form, v4)
	}
	return nil
}

// CheckURL checks a URL as it is handed in: its scheme (https; http too
// when private addresses are allowed), that it carries no credentials, that
// an IPv4 address in it is a dotted quad, and that its host is not a
// non-public address literal or a loopback name. Names are resolved only
// when keeper connects (Transport), where their addresses are checked.
func (p Policy) CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return refused("not an absolute URL")
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && p.AllowPrivate:
	case u.Scheme == "http":
		return refused("only https:// URLs are allowed (http:// only where KEEPER_WEBHOOK_ALLOW_PRIVATE=true)")
	default:
		return refused("scheme %q is not allowed", u.Scheme)
	}
	if u.User != nil {
		return refused("URLs with credentials are not allowed")
	}
	host, err := checkHost(u.Hostname())
	if err != nil || p.AllowPrivate {
		return err
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return refused("loopback host %s", host)
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return CheckAddr(ip)
	}
	return nil
}

// checkHost returns host as keeper's HTTP client dials it (lower case,
// international names in their ASCII form, which maps full-width digits to
// ASCII ones, no trailing dot), refusing an IPv4 address that is not a
// dotted quad: like a browser (WHATWG URL), a host whose last label is a
// number is an IPv4 address.
func checkHost(host string) (string, error) {
	if strings.Contains(host, ":") { // an IPv6 literal
		return host, nil
	}
	if ascii, err := idna.Lookup.ToASCII(host); err == nil {
		host = ascii
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	labels := strings.Split(host, ".")
	if !isNumber(labels[len(labels)-1]) {
		return host, nil
	}
	if ip, err := netip.ParseAddr(host); err == nil && ip.Is4() {
		return host, nil
	}
	return "", refused("host %s is an IPv4 address in a non-standard spelling; write it as a dotted quad of decimals (such as 192.0.2.1)", host)
}

// isNumber reports whether a host label is a number as the WHATWG URL
// standard's IPv4 parser reads one: decimal, or hexadecimal after 0x.
func isNumber(label string) bool {
	digits := "0123456789"
	if len(label) >= 2 && (label[:2] == "0x" || label[:2] == "0X") {
		label, digits = label[2:], "0123456789abcdefABCDEF"
		if label == "" {
			return true
		}
	}
	return label != "" && strings.Trim(label, digits) == ""
}

// Transport returns a copy of base whose every connection is checked
// against the policy: the host's spelling before resolution, the address
// after it. It uses no proxy (a proxy would connect on keeper's behalf,
// unchecked).
func (p Policy) Transport(base *http.Transport) *http.Transport {
	t := base.Clone()
	t.Proxy = nil
	d := &net.Dialer{Control: p.control, Resolver: p.Resolver}
	t.DialContext = func(ctx context.Context, network, address string) (net.Conn, error) {
		if host, _, err := net.SplitHostPort(address); err == nil {
			if _, err := checkHost(host); err != nil {
				return nil, err
			}
		}
		return d.DialContext(ctx, network, address)
	}
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
		return refused("unparsable address %s", address)
	}
	if err := CheckAddr(ap.Addr()); err != nil {
		return refused("at connect time, %s", err.(*RefusedError).Reason)
	}
	return nil
}

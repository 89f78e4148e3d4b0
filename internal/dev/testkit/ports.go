package testkit

import (
	"net"
	"testing"

	"github.com/stretchr/testify/require"
)

// ClosedAddr is a host:port on 127.0.0.1 nothing listened on at the time of
// the call: a port to start a server on, or an address that refuses
// connections.
func ClosedAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// FreePort is ClosedAddr's port.
func FreePort(t testing.TB) int {
	t.Helper()
	_, port, err := net.SplitHostPort(ClosedAddr(t))
	require.NoError(t, err)
	n, err := net.LookupPort("tcp", port)
	require.NoError(t, err)
	return n
}

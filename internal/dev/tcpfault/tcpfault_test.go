package tcpfault_test

import (
	"bufio"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/dev/tcpfault"
)

// echo serves lines back on a free port until the test ends.
func echo(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); io.Copy(c, c) }()
		}
	}()
	return ln.Addr().String()
}

func roundTrip(c net.Conn, line string) (string, error) {
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, line+"\n"); err != nil {
		return "", err
	}
	got, err := bufio.NewReader(c).ReadString('\n')
	return got, err
}

func TestACutEndsLiveConnectionsAndRefusesNewOnesUntilRestored(t *testing.T) {
	p, err := tcpfault.Start(echo(t))
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })

	live, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	defer live.Close()
	got, err := roundTrip(live, "before")
	require.NoError(t, err)
	assert.Equal(t, "before\n", got, "bytes pass unchanged")

	p.Cut()
	_, err = roundTrip(live, "during")
	assert.Error(t, err, "the live connection was closed")
	_, err = net.DialTimeout("tcp", p.Addr(), time.Second)
	assert.Error(t, err, "a new connection is refused")

	require.NoError(t, p.Restore())
	again, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err, "the same port listens again")
	defer again.Close()
	got, err = roundTrip(again, "after")
	require.NoError(t, err)
	assert.Equal(t, "after\n", got)
}

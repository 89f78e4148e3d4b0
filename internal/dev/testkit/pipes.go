package testkit

import (
	"context"
	"net"
	"net/http"
	"sync"
)

// Pipes is an in-memory network between an http.Server and its clients:
// the server serves on Pipes as its listener, and a client from Client
// dials it, each connection a net.Pipe. No socket is involved, so a
// testing/synctest bubble can hold both ends, and its clock runs the
// server's read and write timeouts and the client's pauses.
type Pipes struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

// NewPipes returns a network with nothing connected yet.
func NewPipes() *Pipes {
	return &Pipes{conns: make(chan net.Conn), done: make(chan struct{})}
}

// Accept waits for the next connection a client dials.
func (p *Pipes) Accept() (net.Conn, error) {
	select {
	case c := <-p.conns:
		return c, nil
	case <-p.done:
		return nil, net.ErrClosed
	}
}

// Close stops Accept and refuses new connections; open ones stay open.
func (p *Pipes) Close() error {
	p.once.Do(func() { close(p.done) })
	return nil
}

// Addr names the network for the server's logs.
func (p *Pipes) Addr() net.Addr { return pipeAddr{} }

// Dial connects to the server, whatever the address.
func (p *Pipes) Dial(ctx context.Context, _, _ string) (net.Conn, error) {
	server, client := net.Pipe()
	select {
	case p.conns <- server:
		return client, nil
	case <-p.done:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Client is an HTTP client whose every request goes to the server on p.
func (p *Pipes) Client() *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: p.Dial}}
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

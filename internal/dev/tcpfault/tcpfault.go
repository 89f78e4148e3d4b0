// Package tcpfault is a TCP proxy that tests can cut, for taking a server
// (PostgreSQL, say) away from a process as stopping it would, without
// stopping a server other tests share. It forwards bytes unchanged, so the
// real protocol runs through it. Cut closes every live connection and
// refuses new ones (connection refused: the port is closed) until Restore
// opens the same port again.
package tcpfault

import (
	"errors"
	"io"
	"net"
	"sync"
)

// Proxy forwards connections on 127.0.0.1 to an upstream address. Its
// methods are safe for concurrent use.
type Proxy struct {
	upstream string
	addr     string // 127.0.0.1:port, kept across Cut and Restore

	mu     sync.Mutex
	ln     net.Listener // nil while cut
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// Start listens on a free port of 127.0.0.1 and forwards what arrives there
// to upstream (host:port).
func Start(upstream string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{upstream: upstream, addr: ln.Addr().String(), conns: map[net.Conn]struct{}{}}
	p.serve(ln)
	return p, nil
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.addr }

// Cut closes the listener and every connection through the proxy, both
// ways: clients see their connections end and new ones refused.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

// Restore listens again on the same port.
func (p *Proxy) Restore() error {
	p.mu.Lock()
	up := p.ln != nil || p.closed
	p.mu.Unlock()
	if up {
		return nil
	}
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		return err
	}
	p.serve(ln)
	return nil
}

// Close cuts the proxy for good and waits for its goroutines.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.Cut()
	p.wg.Wait()
	return nil
}

func (p *Proxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return // closed by Cut or Close
			}
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				p.forward(c)
			}()
		}
	}()
}

// forward pipes c to a new upstream connection until either side ends or
// the proxy is cut.
func (p *Proxy) forward(c net.Conn) {
	up, err := net.Dial("tcp", p.upstream)
	if err != nil {
		c.Close()
		return
	}
	if !p.track(c, up) {
		c.Close()
		up.Close()
		return
	}
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, err := io.Copy(dst, src)
		if err != nil && !errors.Is(err, net.ErrClosed) {
			dst.Close()
		}
		if tc, ok := dst.(*net.TCPConn); ok {
			tc.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(up, c)
	go pipe(c, up)
	<-done
	<-done
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, up)
	p.mu.Unlock()
	c.Close()
	up.Close()
}

// track registers a connection pair, unless the proxy was cut meanwhile.
func (p *Proxy) track(c, up net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln == nil {
		return false
	}
	p.conns[c], p.conns[up] = struct{}{}, struct{}{}
	return true
}

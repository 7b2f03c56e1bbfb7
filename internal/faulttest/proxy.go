package faulttest

import (
	"bytes"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Proxy forwards TCP connections from a loopback port to a Redis server and
// can lose a reply on purpose: the command reaches Redis and runs, but the
// client's connection breaks before the reply arrives, so the client cannot
// tell whether it ran. go-redis then sends the command again on a new
// connection.
type Proxy struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	marker []byte // drop the reply to the next command containing it
	conns  map[net.Conn]struct{}
	// refuseAfterDrop: once the armed reply is dropped, refusing is set.
	refuseAfterDrop bool
	wg              sync.WaitGroup
	// refusing makes the proxy close each connection it accepts, as a
	// Redis that is down would (see DropReplyAndRefuse).
	refusing atomic.Bool
	// Dropped counts replies dropped.
	Dropped atomic.Int64
}

// NewProxy listens on a free loopback port and forwards to target
// (host:port).
func NewProxy(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// DropReplyOnce arranges for the reply to the next command whose bytes
// contain marker to be lost.
func (p *Proxy) DropReplyOnce(marker string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.marker = []byte(marker)
}

// DropReplyAndRefuse is DropReplyOnce, after which the proxy refuses
// every new connection until Admit: the command ran, and its client
// finds Redis down before it could read the reply.
func (p *Proxy) DropReplyAndRefuse(marker string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.marker, p.refuseAfterDrop = []byte(marker), true
}

// Admit ends the refusal DropReplyAndRefuse began.
func (p *Proxy) Admit() { p.refusing.Store(false) }

// CutAll breaks every open connection, as a network blip would.
func (p *Proxy) CutAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		_ = c.Close()
	}
}

// Close stops the proxy and breaks its connections.
func (p *Proxy) Close() {
	_ = p.ln.Close()
	p.CutAll()
	p.wg.Wait()
}

func (p *Proxy) track(c net.Conn, on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if on {
		p.conns[c] = struct{}{}
	} else {
		delete(p.conns, c)
	}
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if p.refusing.Load() {
			_ = c.Close()
			continue
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.track(c, true)
		p.track(s, true)
		p.wg.Add(2)
		var mute atomic.Bool
		go func() { // client -> server
			defer p.wg.Done()
			defer func() { _ = c.Close(); _ = s.Close(); p.track(c, false); p.track(s, false) }()
			buf := make([]byte, 64<<10)
			for {
				n, err := c.Read(buf)
				if n > 0 {
					chunk := buf[:n]
					drop := p.take(chunk)
					if drop {
						mute.Store(true)
					}
					if _, werr := s.Write(chunk); werr != nil {
						return
					}
					if drop {
						// Let Redis run it, then break the client's side.
						time.Sleep(100 * time.Millisecond)
						p.Dropped.Add(1)
						return
					}
				}
				if err != nil {
					return
				}
			}
		}()
		go func() { // server -> client
			defer p.wg.Done()
			buf := make([]byte, 64<<10)
			for {
				n, err := s.Read(buf)
				if n > 0 && !mute.Load() {
					if _, werr := c.Write(buf[:n]); werr != nil {
						return
					}
				}
				if err != nil {
					if !errors.Is(err, io.EOF) {
						_ = c.Close()
					}
					return
				}
			}
		}()
	}
}

// take reports whether chunk carries the armed marker, disarming it.
func (p *Proxy) take(chunk []byte) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.marker != nil && bytes.Contains(chunk, p.marker) {
		p.marker = nil
		if p.refuseAfterDrop {
			p.refuseAfterDrop = false
			p.refusing.Store(true)
		}
		return true
	}
	return false
}

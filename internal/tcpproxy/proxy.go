// Package tcpproxy forwards the TCP connections of a loopback listener to
// an address, and can freeze them: Pause stops every byte in both
// directions while the connections stay open (a network that drops its
// packets for a while), Resume lets them flow again, Cut closes them all.
// Placed between a primary and its standby, it holds the standby back.
package tcpproxy

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// dialTimeout bounds the connection to the target made for each accepted
// connection.
const dialTimeout = 5 * time.Second

// Proxy forwards the connections its listener accepts to a target address.
type Proxy struct {
	ln     net.Listener
	target string

	// flow guards gate; a write holds it shared, so that Pause, which
	// takes it alone, returns once no write is under way.
	flow sync.RWMutex
	gate chan struct{} // closed while bytes flow; open (blocking) while paused

	mu     sync.Mutex // guards links and closed
	links  map[*link]struct{}
	closed bool
	wg     sync.WaitGroup
}

// link is one forwarded connection: the client's and the target's side.
type link struct {
	client net.Conn
	mu     sync.Mutex
	server net.Conn      // set once dialed
	done   chan struct{} // closed when the link is cut
}

func (l *link) cut() {
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-l.done:
		return
	default:
	}
	close(l.done)
	l.client.Close()
	if l.server != nil {
		l.server.Close()
	}
}

// connected records the target's side; false: the link was cut meanwhile.
func (l *link) connected(s net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-l.done:
		return false
	default:
		l.server = s
		return true
	}
}

// Listen starts a proxy on a free loopback port that forwards to target
// (host:port).
func Listen(target string) (*Proxy, error) {
	if _, _, err := net.SplitHostPort(target); err != nil {
		return nil, fmt.Errorf("proxy target %q: %w", target, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("proxy listening: %w", err)
	}
	gate := make(chan struct{})
	close(gate)
	p := &Proxy{ln: ln, target: target, gate: gate, links: map[*link]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the address clients connect to (host:port).
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Port is the listener's port.
func (p *Proxy) Port() int { return p.ln.Addr().(*net.TCPAddr).Port }

// Target is the address the proxy forwards to.
func (p *Proxy) Target() string { return p.target }

// Pause stops forwarding: the bytes, half-closes and new connections that
// arrive meanwhile wait, in the proxy and in the kernel's buffers, until
// Resume. The connections stay open. It returns once no write is under
// way: nothing passes after it. Pausing a paused proxy does nothing.
func (p *Proxy) Pause() {
	p.flow.Lock()
	defer p.flow.Unlock()
	select {
	case <-p.gate:
		p.gate = make(chan struct{})
	default:
	}
}

// Resume forwards again, first what waited. Resuming a running proxy does
// nothing.
func (p *Proxy) Resume() {
	p.flow.Lock()
	defer p.flow.Unlock()
	select {
	case <-p.gate:
	default:
		close(p.gate)
	}
}

// Paused reports whether the proxy is paused.
func (p *Proxy) Paused() bool {
	p.flow.RLock()
	defer p.flow.RUnlock()
	select {
	case <-p.gate:
		return false
	default:
		return true
	}
}

// Cut closes every open connection, both sides, at once (what waited in a
// pause is dropped); new connections are accepted as before. It returns how
// many it closed.
func (p *Proxy) Cut() int {
	p.mu.Lock()
	links := make([]*link, 0, len(p.links))
	for l := range p.links {
		links = append(links, l)
	}
	p.mu.Unlock()
	for _, l := range links {
		l.cut()
	}
	return len(links)
}

// Conns is the number of open connections.
func (p *Proxy) Conns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.links)
}

// Close stops listening, cuts every connection and waits for the proxy's
// goroutines to end. Closing a closed proxy does nothing.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	err := p.ln.Close()
	p.Cut()
	p.wg.Wait()
	return err
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// A transient failure (out of descriptors): try again shortly.
			time.Sleep(10 * time.Millisecond)
			continue
		}
		l := &link{client: c, done: make(chan struct{})}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			c.Close()
			return
		}
		p.links[l] = struct{}{}
		p.wg.Add(1)
		p.mu.Unlock()
		go p.serve(l)
	}
}

// hold blocks while the proxy is paused and returns holding flow shared
// (release it with flow.RUnlock); false: the link was cut meanwhile.
func (p *Proxy) hold(l *link) bool {
	for {
		p.flow.RLock()
		gate := p.gate
		select {
		case <-gate:
			return true
		default:
		}
		p.flow.RUnlock()
		select {
		case <-l.done:
			return false
		case <-gate:
		}
	}
}

func (p *Proxy) serve(l *link) {
	defer p.wg.Done()
	defer func() {
		l.cut()
		p.mu.Lock()
		delete(p.links, l)
		p.mu.Unlock()
	}()
	// A connection that arrives during a pause reaches the target only
	// after it.
	if !p.hold(l) {
		return
	}
	p.flow.RUnlock()
	d := net.Dialer{Timeout: dialTimeout}
	s, err := d.Dial("tcp", p.target)
	if err != nil {
		return
	}
	if !l.connected(s) {
		s.Close()
		return
	}
	var both sync.WaitGroup
	both.Add(2)
	go func() { defer both.Done(); p.pipe(l, s, l.client) }()
	go func() { defer both.Done(); p.pipe(l, l.client, s) }()
	both.Wait()
}

// pipe copies src to dst, each chunk after the pause (if any) that follows
// its read. At src's end it half-closes dst; on an error it cuts the link.
func (p *Proxy) pipe(l *link, dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.hold(l) {
				return
			}
			_, werr := dst.Write(buf[:n])
			p.flow.RUnlock()
			if werr != nil {
				l.cut()
				return
			}
		}
		if err != nil {
			if !p.hold(l) {
				return
			}
			halfClosed := false
			if errors.Is(err, io.EOF) {
				if cw, ok := dst.(interface{ CloseWrite() error }); ok {
					halfClosed = cw.CloseWrite() == nil
				}
			}
			p.flow.RUnlock()
			if !halfClosed {
				l.cut()
			}
			return
		}
	}
}

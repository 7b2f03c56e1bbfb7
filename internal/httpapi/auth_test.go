package httpapi

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
)

// samplePath fills a route pattern's wildcards.
func samplePath(pattern string) string {
	r := strings.NewReplacer("{id}", "some-id", "{task}", "charge", "{key...}", "charge:1")
	return r.Replace(pattern)
}

// Issue test 5: a missing or wrong token gets 401 on every API route (and
// /metrics); the health routes stay open.
func TestEveryAPIRouteNeedsTheToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t, redistest.Mini(t), envOptions{})
	e.register(task.Spec{Name: "charge", Expression: `input.id`, Strategy: task.StrategyTTL, TTLMs: 60000})
	before := e.snapshot()
	badHeaders := map[string]map[string]string{
		"no header":      nil,
		"wrong token":    {"Authorization": "Bearer not-the-token"},
		"token prefix":   {"Authorization": "Bearer " + testToken[:4]},
		"token + more":   {"Authorization": "Bearer " + testToken + "x"},
		"basic scheme":   {"Authorization": "Basic " + testToken},
		"bare token":     {"Authorization": testToken},
		"empty bearer":   {"Authorization": "Bearer "},
		"token in query": nil,
	}
	protected := 0
	for _, rt := range e.s.routes {
		path := samplePath(rt.pattern)
		if rt.signed {
			continue // signed by its sender instead: webhooks_test.go
		}
		if rt.open {
			r := e.callWith(rt.method, path, nil, nil)
			if r.status != http.StatusOK {
				t.Errorf("open route %s %s without a token: %d %s", rt.method, path, r.status, r.raw)
			}
			continue
		}
		protected++
		for name, h := range badHeaders {
			p := path
			if name == "token in query" {
				p += "?token=" + testToken
			}
			r := e.callWith(rt.method, p, `{"input": {"id": "1"}, "key": "k"}`, h)
			if r.status != http.StatusUnauthorized || r.str("error") != CodeUnauthorized || r.str("message") == "" {
				t.Errorf("%s %s with %s: %d %s, want 401 unauthorized", rt.method, path, name, r.status, r.raw)
			}
			if !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("%s %s with %s: no WWW-Authenticate challenge", rt.method, path, name)
			}
		}
	}
	if protected < 9 {
		t.Fatalf("only %d protected routes checked", protected)
	}
	// Unknown API paths do not reveal whether they exist.
	if r := e.callWith("GET", "/api/v2/anything", nil, nil); r.status != http.StatusUnauthorized {
		t.Errorf("unknown API path without a token: %d", r.status)
	}
	if after := e.snapshot(); after != before {
		t.Fatalf("unauthorized requests wrote to Redis:\nbefore:\n%safter:\n%s", before, after)
	}
	// With the token every route answers as itself.
	for _, rt := range e.s.routes {
		if r := e.call(rt.method, samplePath(rt.pattern), `{"input": {"id": "1"}}`); r.status == http.StatusUnauthorized {
			t.Errorf("%s %s with the token: 401", rt.method, rt.pattern)
		}
	}
}

func TestNewRefusesNoTokenUnlessInsecure(t *testing.T) {
	t.Parallel()
	b := redistest.Mini(t)
	c, err := client.New(client.Options{Redis: b.Client, Namespace: b.Namespace, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = New(Options{Client: c, Logger: quiet})
	var nt *NoTokenError
	if !errors.As(err, &nt) || !errors.Is(err, ErrNoToken) {
		t.Fatalf("New without a token: %v, want *NoTokenError", err)
	}
	for _, name := range []string{TokenFlag, TokenEnv, InsecureFlag} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error %q does not name %s", err, name)
		}
	}
	if _, err := New(Options{Logger: quiet, Token: testToken}); err == nil {
		t.Error("New accepted options without a client")
	}
	if _, err := New(Options{Client: c, Logger: quiet, Token: testToken, MaxBatch: -1}); err == nil {
		t.Error("New accepted a negative MaxBatch")
	}
	e := newEnv(t, b, envOptions{server: Options{Insecure: true}})
	if r := e.callWith("GET", "/api/v1/tasks", nil, nil); r.status != http.StatusOK {
		t.Fatalf("insecure server refused a request without a token: %d %s", r.status, r.raw)
	}
}

// A configured token that no request could match, or too short to be a
// secret, is refused when the server is built, with a typed error that
// names the problem and not the token.
func TestNewRefusesUnusableTokens(t *testing.T) {
	t.Parallel()
	b := redistest.Mini(t)
	c, err := client.New(client.Options{Redis: b.Client, Namespace: b.Namespace, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for token, want := range map[string]string{
		testToken + "\n":          "whitespace",
		" " + testToken:           "whitespace",
		"\t" + testToken + " ":    "whitespace",
		"s3cret token with space": "byte 0x20 at offset 6",
		testToken + "\x00":        "byte 0x00",
		testToken + "é":           "byte 0xc3",
		"short-token":             "is 11 bytes long; use at least 16",
		strings.Repeat("x", 15):   "at least 16",
	} {
		_, err := New(Options{Client: c, Logger: quiet, Token: token})
		var te *TokenError
		if !errors.As(err, &te) || !errors.Is(err, ErrBadToken) || !strings.Contains(err.Error(), want) {
			t.Errorf("token %q: %v, want a *TokenError saying %q", token, err, want)
			continue
		}
		if strings.Contains(err.Error(), strings.TrimSpace(token)) {
			t.Errorf("the error quotes the token: %v", err)
		}
	}
	if _, err := New(Options{Client: c, Logger: quiet, Token: strings.Repeat("x", TokenMinLength)}); err != nil {
		t.Errorf("a token of exactly %d bytes: %v", TokenMinLength, err)
	}
}

// Without a token the server serves only on a loopback address: the
// address given is checked before listening, and the listener itself when
// serving.
func TestInsecureOnlyOnLoopback(t *testing.T) {
	t.Parallel()
	for addr, ok := range map[string]bool{
		"127.0.0.1:8080": true, "127.1.2.3:0": true, "[::1]:8080": true, "localhost:8080": true,
		":8080": false, "0.0.0.0:8080": false, "[::]:8080": false, "192.168.1.10:8080": false,
		"example.com:8080": false, "10.0.0.1:0": false,
	} {
		err := CheckInsecureAddr(addr)
		if ok && err != nil {
			t.Errorf("%s: %v, want allowed", addr, err)
		}
		var ie *InsecureAddrError
		if !ok && (!errors.As(err, &ie) || !errors.Is(err, ErrInsecureAddr) || !strings.Contains(err.Error(), "loopback")) {
			t.Errorf("%s: %v, want an *InsecureAddrError", addr, err)
		}
	}
	if err := CheckInsecureAddr("no-port"); err == nil {
		t.Error("an address without a port was accepted")
	}

	b := redistest.Mini(t)
	c, err := client.New(client.Options{Redis: b.Client, Namespace: b.Namespace, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := New(Options{Client: c, Logger: quiet, Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	ln := &fakeListener{addr: &net.TCPAddr{IP: net.IPv4zero, Port: 8080}}
	err = s.Serve(context.Background(), ln)
	if !errors.Is(err, ErrInsecureAddr) || !ln.closed {
		t.Fatalf("Serve without a token on 0.0.0.0: %v (listener closed: %v), want an *InsecureAddrError", err, ln.closed)
	}
	// With a token any address is fine: the listener is served.
	ts, err := New(Options{Client: c, Logger: quiet, Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := ts.Serve(ctx, &fakeListener{addr: &net.TCPAddr{IP: net.IPv4zero, Port: 8080}}); errors.Is(err, ErrInsecureAddr) {
		t.Fatalf("Serve with a token: %v", err)
	}
}

// fakeListener is a listener on any address that accepts nothing.
type fakeListener struct {
	addr   net.Addr
	mu     sync.Mutex
	closed bool
	done   chan struct{}
}

func (l *fakeListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	if l.done == nil {
		l.done = make(chan struct{})
	}
	done := l.done
	l.mu.Unlock()
	<-done
	return nil, net.ErrClosed
}

func (l *fakeListener) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done == nil {
		l.done = make(chan struct{})
	}
	if !l.closed {
		l.closed = true
		close(l.done)
	}
	return nil
}

func (l *fakeListener) Addr() net.Addr { return l.addr }

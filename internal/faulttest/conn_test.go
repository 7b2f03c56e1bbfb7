package faulttest_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/internal/faulttest"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/worker"
)

// roundTrip triggers a run through c and has an in-process worker on wrdb
// run it, proving both sides work over the connection given.
func roundTrip(t *testing.T, c *client.Client, wrdb redis.UniversalClient, ns string) {
	t.Helper()
	ctx := context.Background()
	defs, _ := faulttest.Definitions(faulttest.TaskConfig{})
	w, err := worker.New(worker.Options{Redis: wrdb, Namespace: ns, Logger: quiet, LeaseDuration: time.Second, FetchBlock: 100 * time.Millisecond, ShutdownTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range defs {
		if err := w.HandleJSON(d, func(wctx worker.Context, raw json.RawMessage) (json.RawMessage, error) {
			return json.Marshal(faulttest.Output{RunID: wctx.RunID(), Worker: "w", Attempt: wctx.Attempt()})
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Shutdown(ctx)
	h, err := c.TriggerJSON(ctx, defs[0], []byte(`{"op":"conn","key":"conn"}`))
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	info, err := h.Wait(wctx)
	if err != nil || info.Status != client.StatusSucceeded {
		t.Fatalf("run over the connection: %+v %v", info, err)
	}
}

func newClientURL(t *testing.T, url, ns string) *client.Client {
	t.Helper()
	c, err := client.New(client.Options{RedisURL: url, Namespace: ns, Logger: quiet, OperationTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func admin(t *testing.T, srv *redistest.Server) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// A password set with requirepass: redis://:password@host works for
// clients and workers; a wrong one fails with Redis's own clear message.
func TestRedisAuth(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	ctx := context.Background()
	if err := admin(t, srv).ConfigSet(ctx, "requirepass", "s3cret").Err(); err != nil {
		t.Fatal(err)
	}
	url := "redis://:s3cret@" + srv.Addr() + "/0"
	c := newClientURL(t, url, "auth")
	opt, _ := redis.ParseURL(url)
	wrdb := redis.NewClient(opt)
	defer wrdb.Close()
	roundTrip(t, c, wrdb, "auth")

	bad := newClientURL(t, "redis://:wrong@"+srv.Addr()+"/0", "auth")
	err := bad.Ping(ctx)
	if err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
		t.Fatalf("wrong password: %v; want WRONGPASS", err)
	}
	none := newClientURL(t, srv.URL(), "auth")
	if err := none.Ping(ctx); err == nil || !strings.Contains(err.Error(), "NOAUTH") {
		t.Fatalf("no password: %v; want NOAUTH", err)
	}
}

// An ACL user limited to taskq's keys and channels and without dangerous
// commands but INFO (which tells the maxmemory-policy) is enough for
// clients and workers: redis://user:password@host.
// A user whose key pattern leaves out the namespace gets NOPERM, and
// nothing is written.
func TestRedisACLUser(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	ctx := context.Background()
	a := admin(t, srv)
	if err := a.Do(ctx, "ACL", "SETUSER", "taskq", "on", ">pw", "~taskq:*", "&taskq:*", "+@all", "-@dangerous", "+info").Err(); err != nil {
		t.Fatal(err)
	}
	if err := a.Do(ctx, "ACL", "SETUSER", "other", "on", ">pw", "~other:*", "&*", "+@all", "-@dangerous", "+info").Err(); err != nil {
		t.Fatal(err)
	}
	url := "redis://taskq:pw@" + srv.Addr() + "/0"
	c := newClientURL(t, url, "acl")
	opt, _ := redis.ParseURL(url)
	wrdb := redis.NewClient(opt)
	defer wrdb.Close()
	roundTrip(t, c, wrdb, "acl")

	denied := newClientURL(t, "redis://other:pw@"+srv.Addr()+"/0", "acl")
	defs, _ := faulttest.Definitions(faulttest.TaskConfig{})
	_, err := denied.TriggerJSON(ctx, defs[0], []byte(`{"op":"denied","key":"denied"}`))
	if err == nil || !strings.Contains(err.Error(), "NOPERM") {
		t.Fatalf("user without access to the namespace: %v; want NOPERM", err)
	}
	if n, _ := a.Exists(ctx, "taskq:{acl}:key:s:denied").Result(); n != 0 {
		t.Fatal("a refused trigger claimed its key")
	}
}

// TLS: rediss:// with the server's CA in the client's TLS config (passed
// as Options.Redis, since a URL cannot carry a CA). Without the CA the
// connection is refused with the certificate error.
func TestRedisTLS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	caPool := writeCerts(t, dir)
	port := freePort(t)
	srv := redistest.StartServer(t,
		"--tls-port", strconv.Itoa(port),
		"--tls-cert-file", filepath.Join(dir, "server.crt"),
		"--tls-key-file", filepath.Join(dir, "server.key"),
		"--tls-ca-cert-file", filepath.Join(dir, "ca.crt"),
		"--tls-auth-clients", "no")
	_ = srv
	ctx := context.Background()
	url := "rediss://127.0.0.1:" + strconv.Itoa(port) + "/0"

	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	opt.TLSConfig.RootCAs = caPool // ParseURL sets TLSConfig (ServerName from the host) for rediss://
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	c, err := client.New(client.Options{Redis: rdb, Namespace: "tls", Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	wopt, _ := redis.ParseURL(url)
	wopt.TLSConfig.RootCAs = caPool
	wrdb := redis.NewClient(wopt)
	defer wrdb.Close()
	roundTrip(t, c, wrdb, "tls")

	untrusting := newClientURL(t, url, "tls")
	err = untrusting.Ping(ctx)
	var unknown x509.UnknownAuthorityError
	if err == nil || !errors.As(err, &unknown) {
		t.Fatalf("rediss:// without the CA: %v; want x509.UnknownAuthorityError", err)
	}
}

// A Redis that accepts connections but never answers (a hung server, a
// network black hole) and one that refuses them: a trigger fails once
// OperationTimeout has passed (go-redis keeps redialling a refusing server
// until then), never hangs, and names the task and the deadline.
func TestUnreachableRedisFailsPromptly(t *testing.T) {
	t.Parallel()
	hole, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hole.Close()
	go func() {
		var held []net.Conn // hold them open, never answer
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			conn, err := hole.Accept()
			if err != nil {
				return
			}
			held = append(held, conn)
		}
	}()
	refusing := "127.0.0.1:" + strconv.Itoa(freePort(t))
	defs, _ := faulttest.Definitions(faulttest.TaskConfig{})
	const timeout = 300 * time.Millisecond

	for _, tc := range []struct{ name, addr string }{{"silent", hole.Addr().String()}, {"refusing", refusing}} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := client.New(client.Options{RedisURL: "redis://" + tc.addr + "/0", Namespace: "down", Logger: quiet, OperationTimeout: timeout})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			errc := make(chan error, 1)
			began := time.Now()
			go func() {
				_, err := c.TriggerJSON(context.Background(), defs[0], []byte(`{"op":"down","key":"down"}`))
				errc <- err
			}()
			select {
			case err := <-errc:
				t.Logf("failed after %s: %v", time.Since(began).Round(time.Millisecond), err)
				if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), `task "`+defs[0].Name+`"`) {
					t.Fatalf("trigger against an unreachable Redis: %v; want the task named and context.DeadlineExceeded", err)
				}
				var ue *client.UnavailableError
				if !errors.As(err, &ue) || !errors.Is(err, client.ErrUnavailable) || ue.Addr != tc.addr {
					t.Fatalf("trigger against an unreachable Redis: %v; want an *UnavailableError naming %s", err, tc.addr)
				}
				// A refused connection is named, not hidden behind the deadline.
				switch refused := "Redis at " + tc.addr + " refused the connection"; tc.name {
				case "refusing":
					if !errors.Is(err, syscall.ECONNREFUSED) || !strings.Contains(err.Error(), refused) ||
						!strings.Contains(err.Error(), "connection refused") || strings.Contains(err.Error(), "did not answer") {
						t.Fatalf("trigger against a port that refuses connections: %v; want the refusal named", err)
					}
				default:
					if !strings.Contains(err.Error(), "Redis at "+tc.addr+" did not answer") {
						t.Fatalf("trigger against a Redis that does not answer: %v; want it to say so", err)
					}
				}
			case <-time.After(10 * timeout):
				t.Fatalf("trigger against an unreachable Redis still waiting after %s with OperationTimeout %s", 10*timeout, timeout)
			}
		})
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// writeCerts writes a self-signed CA and a server certificate for
// 127.0.0.1 signed by it, and returns a pool holding the CA.
func writeCerts(t *testing.T, dir string) *x509.CertPool {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "taskq test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	srvKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	srvTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, ca, &srvKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(srvKey)
	write := func(name, typ string, der []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("ca.crt", "CERTIFICATE", caDER)
	write("server.crt", "CERTIFICATE", srvDER)
	write("server.key", "EC PRIVATE KEY", keyDER)
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return pool
}

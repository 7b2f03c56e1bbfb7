package httpapi

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
)

// testCA is a certificate authority made for a test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue makes a leaf certificate for 127.0.0.1 (a server's, or a client's
// with client set), as PEM certificate and key.
func (ca *testCA) issue(t *testing.T, serial int64, client bool) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	usage := x509.ExtKeyUsageServerAuth
	if client {
		usage = x509.ExtKeyUsageClientAuth
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "taskq test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path+".tmp", data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
}

// serveTLS runs a server with TLS options on a loopback port until the
// test ends, and returns its address.
func serveTLS(t *testing.T, o TLSOptions) string {
	t.Helper()
	b := redistest.Mini(t)
	c, err := client.New(client.Options{Redis: b.Client, Namespace: b.Namespace, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	s, err := New(Options{Client: c, Token: testToken, TLS: &o, Logger: quiet, ShutdownTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return ln.Addr().String()
}

func httpsClient(roots []byte, cert *tls.Certificate, maxVersion uint16) *http.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(roots)
	cfg := &tls.Config{RootCAs: pool, MaxVersion: maxVersion}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}, Timeout: 10 * time.Second}
}

// get fetches /healthz and returns the status and the serial number of
// the server's certificate.
func getHealth(c *http.Client, addr string) (int, int64, error) {
	resp, err := c.Get("https://" + addr + "/healthz")
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.TLS == nil || len(resp.TLS.PeerCertificates) == 0 {
		return resp.StatusCode, 0, errors.New("not TLS")
	}
	if resp.TLS.Version < tls.VersionTLS12 {
		return 0, 0, errors.New("below TLS 1.2")
	}
	return resp.StatusCode, resp.TLS.PeerCertificates[0].SerialNumber.Int64(), nil
}

// The server answers over HTTPS and not over plain HTTP on that port, or
// TLS below 1.2; a replaced certificate is served to new connections
// while an open one carries on.
func TestServeTLSAndReloadTheCertificate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ca := newTestCA(t, "taskq test CA")
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	cert, key := ca.issue(t, 100, false)
	writeFile(t, certFile, cert)
	writeFile(t, keyFile, key)
	addr := serveTLS(t, TLSOptions{CertFile: certFile, KeyFile: keyFile})

	first := httpsClient(ca.pem, nil, 0)
	status, serial, err := getHealth(first, addr)
	if err != nil || status != http.StatusOK || serial != 100 {
		t.Fatalf("over HTTPS: %d, certificate %d, %v", status, serial, err)
	}

	// Plain HTTP on the TLS port gets no answer of the API.
	resp, err := http.Get("http://" + addr + "/healthz")
	if err == nil {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || strings.Contains(string(body), "ok") {
			t.Errorf("plain HTTP on the TLS port: %d %s", resp.StatusCode, body)
		}
	}
	// TLS 1.1 is refused.
	if _, _, err := getHealth(httpsClient(ca.pem, nil, tls.VersionTLS11), addr); err == nil {
		t.Error("a TLS 1.1 client was served")
	}

	// Replace the certificate: new connections get the new one, the open
	// connection carries on with the old.
	cert2, key2 := ca.issue(t, 200, false)
	writeFile(t, keyFile, key2)
	writeFile(t, certFile, cert2)
	status, serial, err = getHealth(httpsClient(ca.pem, nil, 0), addr)
	if err != nil || status != http.StatusOK || serial != 200 {
		t.Fatalf("a new connection after the replacement: %d, certificate %d, %v", status, serial, err)
	}
	status, serial, err = getHealth(first, addr)
	if err != nil || status != http.StatusOK || serial != 100 {
		t.Fatalf("the open connection after the replacement: %d, certificate %d, %v (want the old certificate, on the same connection)", status, serial, err)
	}
	// A broken replacement keeps the certificate in force.
	writeFile(t, certFile, []byte("not a certificate"))
	status, serial, err = getHealth(httpsClient(ca.pem, nil, 0), addr)
	if err != nil || status != http.StatusOK || serial != 200 {
		t.Fatalf("after a broken replacement: %d, certificate %d, %v", status, serial, err)
	}
}

// With a client CA, only a client certificate that CA signed is served.
func TestServeMutualTLS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	serverCA, clientCA, otherCA := newTestCA(t, "server CA"), newTestCA(t, "client CA"), newTestCA(t, "other CA")
	certFile, keyFile, caFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"), filepath.Join(dir, "clients.pem")
	cert, key := serverCA.issue(t, 1, false)
	writeFile(t, certFile, cert)
	writeFile(t, keyFile, key)
	writeFile(t, caFile, clientCA.pem)
	addr := serveTLS(t, TLSOptions{CertFile: certFile, KeyFile: keyFile, ClientCAFile: caFile})

	pair := func(ca *testCA) *tls.Certificate {
		c, k := ca.issue(t, 7, true)
		p, err := tls.X509KeyPair(c, k)
		if err != nil {
			t.Fatal(err)
		}
		return &p
	}
	if status, _, err := getHealth(httpsClient(serverCA.pem, pair(clientCA), 0), addr); err != nil || status != http.StatusOK {
		t.Fatalf("a client certificate of the configured CA: %d %v", status, err)
	}
	if _, _, err := getHealth(httpsClient(serverCA.pem, nil, 0), addr); err == nil {
		t.Error("a client without a certificate was served")
	}
	if _, _, err := getHealth(httpsClient(serverCA.pem, pair(otherCA), 0), addr); err == nil {
		t.Error("a client certificate of another CA was served")
	}
}

package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/auth"
	"github.com/taskq/taskq/internal/redistest"
)

// selfSigned writes a self-signed certificate for 127.0.0.1 and its key,
// and returns the certificate's PEM.
func selfSigned(t *testing.T, certFile, keyFile string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "taskq serve test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certPEM
}

// serve over TLS with a tokens file: HTTPS only; the tokens' scopes apply;
// SIGHUP reads the tokens file again, so a token added to it works
// without a restart.
func TestServeTLSWithATokensFileReloadedOnHangup(t *testing.T) {
	t.Parallel()
	cl := newCLI(t, redistest.Mini(t))
	dir := t.TempDir()
	certFile, keyFile, tokens := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"), filepath.Join(dir, "tokens.yaml")
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(selfSigned(t, certFile, keyFile))
	const reader, trigger, added = "reader-0123456789abcdef", "trigger-0123456789abcdef", "added-0123456789abcdef"
	writeTokens := func(extra string) {
		data := fmt.Sprintf("tokens:\n  - {name: reader, sha256: %s, scopes: [read]}\n  - {name: ci, sha256: %s, scopes: [trigger]}\n%s",
			auth.Hash(reader), auth.Hash(trigger), extra)
		if err := os.WriteFile(tokens, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	writeTokens("")

	ctx, cancel := context.WithCancel(context.Background())
	stderr := &redistest.LogBuffer{}
	done := make(chan result, 1)
	go func() {
		done <- runWith(ctx, invocation{stderr: stderr}, cl.args([]string{"serve", "--addr", "127.0.0.1:0", "--tokens-file", tokens,
			"--tls-cert", certFile, "--tls-key", keyFile})...)
	}()
	defer func() { cancel(); <-done }()
	var addr string
	for i := 0; addr == ""; i++ {
		if m := serveURL.FindStringSubmatch(stderr.String()); m != nil {
			addr = m[1]
		} else if i > 1000 {
			t.Fatalf("serve did not log its address: %s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	get := func(token string) int {
		req, _ := http.NewRequest(http.MethodGet, "https://"+addr+"/api/v1/tasks", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if st := get(reader); st != http.StatusOK {
		t.Fatalf("a read token over HTTPS: %d", st)
	}
	if st := get(trigger); st != http.StatusForbidden {
		t.Fatalf("a trigger token on a read route: %d, want 403", st)
	}
	if st := get(added); st != http.StatusUnauthorized {
		t.Fatalf("a token not in the file yet: %d, want 401", st)
	}
	if resp, err := http.Get("http://" + addr + "/healthz"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatal("plain HTTP was served on the TLS port")
		}
	}

	writeTokens(fmt.Sprintf("  - {name: added, sha256: %s, scopes: [read]}\n", auth.Hash(added)))
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	for i := 0; get(added) != http.StatusOK; i++ {
		if i > 500 {
			t.Fatalf("the token added to the file was not accepted after SIGHUP:\n%s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(stderr.String(), "reloaded tokens") {
		t.Errorf("the reload was not logged:\n%s", stderr.String())
	}
}

package httpapi

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// Names the taskq CLI gives the TLS settings of `taskq serve`.
const (
	TLSCertFlag     = "--tls-cert"
	TLSKeyFlag      = "--tls-key"
	TLSClientCAFlag = "--tls-client-ca"
)

// TLSOptions make Serve answer HTTPS only, with TLS 1.2 or later.
type TLSOptions struct {
	// CertFile and KeyFile are the PEM certificate (chain) and its key.
	// They are read again when either file changes (checked at each new
	// connection) and on Server.Reload; connections already open keep
	// the certificate they began with.
	CertFile, KeyFile string
	// ClientCAFile, when set, is a PEM bundle of certificate authorities:
	// every client must present a certificate one of them signed (mutual
	// TLS). It is read again on Server.Reload.
	ClientCAFile string
}

// ErrTLS matches *TLSError.
var ErrTLS = errors.New("unusable TLS settings")

// TLSError says which TLS file could not be used, and why.
type TLSError struct {
	File    string
	Problem string
}

func (e *TLSError) Error() string {
	return fmt.Sprintf("certificate file %s: %s", e.File, e.Problem)
}

// Is makes errors.Is(err, ErrTLS) hold.
func (*TLSError) Is(target error) bool { return target == ErrTLS }

// certReloader holds the certificate (and the client CAs) in force, and
// loads them again when the files change.
type certReloader struct {
	opts TLSOptions
	log  *slog.Logger

	mu      sync.Mutex
	cert    *tls.Certificate
	stamp   [2]fileStamp // of CertFile and KeyFile when cert was loaded
	clients *x509.CertPool
}

// fileStamp tells a file's versions apart.
type fileStamp struct {
	mod  time.Time
	size int64
}

func stampOf(path string) fileStamp {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}
	}
	return fileStamp{mod: fi.ModTime(), size: fi.Size()}
}

func newCertReloader(o TLSOptions, log *slog.Logger) (*certReloader, error) {
	switch {
	case o.CertFile == "" || o.KeyFile == "":
		return nil, fmt.Errorf("httpapi: TLS needs both a certificate (%s) and its key (%s)", TLSCertFlag, TLSKeyFlag)
	}
	c := &certReloader{opts: o, log: log}
	if err := c.reload(); err != nil {
		return nil, err
	}
	return c, nil
}

// reload reads the certificate, its key and the client CAs again. On an
// error what was in force stays.
func (c *certReloader) reload() error {
	stamp := [2]fileStamp{stampOf(c.opts.CertFile), stampOf(c.opts.KeyFile)}
	cert, err := tls.LoadX509KeyPair(c.opts.CertFile, c.opts.KeyFile)
	if err != nil {
		return &TLSError{File: c.opts.CertFile + " and " + c.opts.KeyFile, Problem: err.Error()}
	}
	var pool *x509.CertPool
	if c.opts.ClientCAFile != "" {
		pem, err := os.ReadFile(c.opts.ClientCAFile)
		if err != nil {
			return &TLSError{File: c.opts.ClientCAFile, Problem: err.Error()}
		}
		pool = x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return &TLSError{File: c.opts.ClientCAFile, Problem: "holds no PEM certificate"}
		}
	}
	c.mu.Lock()
	c.cert, c.stamp, c.clients = &cert, stamp, pool
	c.mu.Unlock()
	return nil
}

// certificate is tls.Config.GetCertificate: the certificate in force,
// read again first when its files changed since it was loaded. A change
// that does not load (a key written after its certificate, say) keeps the
// previous certificate and is tried again at the next connection.
func (c *certReloader) certificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	now := [2]fileStamp{stampOf(c.opts.CertFile), stampOf(c.opts.KeyFile)}
	c.mu.Lock()
	changed := now != c.stamp
	c.mu.Unlock()
	if changed {
		if err := c.reload(); err != nil {
			c.log.Warn("taskq: the TLS certificate changed on disk but does not load; serving the previous one", "err", err)
			c.mu.Lock()
			c.stamp = now // try again when the files change next
			c.mu.Unlock()
		} else {
			c.log.Info("taskq: TLS certificate reloaded", "file", c.opts.CertFile)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cert, nil
}

// config is the server's TLS configuration: TLS 1.2 or later, the
// certificate from certificate, and client certificates required when
// client CAs are set.
func (c *certReloader) config() *tls.Config {
	base := &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: c.certificate}
	if c.opts.ClientCAFile == "" {
		return base
	}
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			c.mu.Lock()
			pool := c.clients
			c.mu.Unlock()
			return &tls.Config{
				MinVersion: tls.VersionTLS12, GetCertificate: c.certificate,
				ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool,
			}, nil
		},
	}
}

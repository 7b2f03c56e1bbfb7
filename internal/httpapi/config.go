package httpapi

import (
	"errors"
	"fmt"
	"net"
	"strings"
)

// TokenMinLength is the fewest bytes an API token may have.
const TokenMinLength = 16

// ErrBadToken matches *TokenError.
var ErrBadToken = errors.New("unusable API token")

// TokenError says why a configured API token is refused: clients could
// not send it as configured (surrounding whitespace is trimmed from the
// request's token, a control character cannot travel in a header), or it
// is too short to be a secret.
type TokenError struct {
	// Reason says what is wrong, without the token itself.
	Reason string
}

func (e *TokenError) Error() string {
	return fmt.Sprintf("httpapi: the API token (%s or %s) %s", TokenFlag, TokenEnv, e.Reason)
}

// Is makes errors.Is(err, ErrBadToken) hold.
func (*TokenError) Is(target error) bool { return target == ErrBadToken }

// CheckToken returns a *TokenError unless token can serve as the bearer
// token: at least TokenMinLength bytes of visible ASCII (33-126), so no
// whitespace anywhere. An empty token is not checked here (see
// NoTokenError).
func CheckToken(token string) error {
	if token == "" {
		return nil
	}
	if strings.TrimSpace(token) != token {
		return &TokenError{Reason: "starts or ends with whitespace, which clients' tokens are trimmed of, so no request would match it: remove it"}
	}
	for i := 0; i < len(token); i++ {
		if c := token[i]; c < 0x21 || c > 0x7e {
			return &TokenError{Reason: fmt.Sprintf("has byte 0x%02x at offset %d: use visible ASCII characters only (no spaces, control characters or non-ASCII)", c, i)}
		}
	}
	if len(token) < TokenMinLength {
		return &TokenError{Reason: fmt.Sprintf("is %d bytes long; use at least %d (for example: openssl rand -hex 16)", len(token), TokenMinLength)}
	}
	return nil
}

// ErrInsecureAddr matches *InsecureAddrError.
var ErrInsecureAddr = errors.New("serving without authentication on a non-loopback address")

// InsecureAddrError is returned when the server would serve without a
// token (Options.Insecure) on an address other machines can reach.
type InsecureAddrError struct {
	Addr string
}

func (e *InsecureAddrError) Error() string {
	return fmt.Sprintf("httpapi: %s serves without authentication and is allowed only on a loopback address, not %q: listen on 127.0.0.1 or [::1] (--addr 127.0.0.1:8080), or set a token with %s or %s",
		InsecureFlag, e.Addr, TokenFlag, TokenEnv)
}

// Is makes errors.Is(err, ErrInsecureAddr) hold.
func (*InsecureAddrError) Is(target error) bool { return target == ErrInsecureAddr }

// CheckInsecureAddr returns an *InsecureAddrError unless addr (host:port,
// as given to net.Listen) is a loopback address: "localhost" or a loopback
// IP. An empty host (":8080") listens on every interface and is refused;
// so is any other host name, which could resolve to anything. Serve checks
// the address it actually listens on as well.
func CheckInsecureAddr(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("httpapi: listen address %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	host, _, _ = strings.Cut(host, "%") // an IPv6 zone
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return &InsecureAddrError{Addr: addr}
}

// loopbackListener reports whether ln accepts only local connections: a
// TCP listener on a loopback IP, or a Unix socket.
func loopbackListener(ln net.Listener) bool {
	switch a := ln.Addr().(type) {
	case *net.TCPAddr:
		return a.IP.IsLoopback()
	case *net.UnixAddr:
		return true
	}
	return false
}

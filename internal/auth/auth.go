// Package auth holds the named, scoped tokens of `taskq serve`: which
// token may do what, read from a tokens file that stores SHA-256 hashes
// (so that it holds no secret) and from flags, and swapped whole on a
// reload so that a token can be added before the old one is removed.
//
// The HTTP API (internal/httpapi) checks a request's bearer token against
// a Keyring and each route's scope; the dashboard (internal/webui) maps a
// token's scopes to what a session may do.
package auth

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"go.yaml.in/yaml/v3"
)

// Scope is a right a token grants.
type Scope string

// The scopes. Admin grants every other one.
const (
	// ScopeTrigger: trigger runs and push events.
	ScopeTrigger Scope = "trigger"
	// ScopeRead: lookups and lists, /metrics, the dashboard read-only.
	ScopeRead Scope = "read"
	// ScopeOperate: cancel, retry and reschedule runs, release and signal
	// keys, replay events, manage and pause schedules; act in the dashboard.
	ScopeOperate Scope = "operate"
	// ScopeAdmin: everything.
	ScopeAdmin Scope = "admin"
)

// Scopes lists every scope, narrowest first.
var Scopes = []Scope{ScopeTrigger, ScopeRead, ScopeOperate, ScopeAdmin}

func (s Scope) valid() bool { return slices.Contains(Scopes, s) }

// NameMaxLength bounds a token's name, which appears in logs and metric
// labels.
const NameMaxLength = 64

// Token is one named token: the SHA-256 of its value and its scopes.
type Token struct {
	Name   string
	Hash   [sha256.Size]byte
	Scopes []Scope
}

// Identity is who a request authenticated as: a token's name and scopes.
type Identity struct {
	Name   string
	Scopes []Scope
}

// Has reports whether the identity holds scope s (admin holds every one).
func (id Identity) Has(s Scope) bool {
	return slices.Contains(id.Scopes, s) || slices.Contains(id.Scopes, ScopeAdmin)
}

// Hash returns the lowercase hex SHA-256 of a token's value, as a tokens
// file stores it.
func Hash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// ErrInvalidTokens matches *TokensError.
var ErrInvalidTokens = errors.New("invalid tokens")

// TokensError says what is wrong with a tokens file or flag: where, and
// the problem.
type TokensError struct {
	// Source is the file, or the flag, the token came from.
	Source string
	// Token is the name (or index) of the token at fault, if any.
	Token   string
	Problem string
}

func (e *TokensError) Error() string {
	if e.Token != "" {
		return fmt.Sprintf("%s: token %s: %s", e.Source, e.Token, e.Problem)
	}
	return fmt.Sprintf("%s: %s", e.Source, e.Problem)
}

// Is makes errors.Is(err, ErrInvalidTokens) hold.
func (*TokensError) Is(target error) bool { return target == ErrInvalidTokens }

// fileToken is one entry of a tokens file.
type fileToken struct {
	Name   string   `yaml:"name" json:"name"`
	SHA256 string   `yaml:"sha256" json:"sha256"`
	Scopes []string `yaml:"scopes" json:"scopes"`
}

type tokensFile struct {
	Tokens []fileToken `yaml:"tokens" json:"tokens"`
}

// ParseFile reads a tokens file (YAML, or JSON, which is YAML too):
//
//	tokens:
//	  - name: ci
//	    sha256: 2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae
//	    scopes: [trigger, read]
func ParseFile(path string, data []byte) ([]Token, error) {
	var f tokensFile
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return nil, &TokensError{Source: path, Problem: "not a tokens file: " + err.Error()}
	}
	out := make([]Token, 0, len(f.Tokens))
	for i, ft := range f.Tokens {
		t, err := newToken(path, i, ft.Name, ft.SHA256, ft.Scopes)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// ParseFlag reads a token given on the command line as
// NAME:SCOPE[,SCOPE...]:SHA256 (flag names the flag, for errors).
func ParseFlag(flag, value string) (Token, error) {
	parts := strings.Split(value, ":")
	if len(parts) != 3 {
		return Token{}, &TokensError{Source: flag, Problem: fmt.Sprintf("%q is not NAME:SCOPE[,SCOPE]:SHA256 (the hex SHA-256 of the token)", clip(value))}
	}
	return newToken(flag, -1, parts[0], parts[2], strings.Split(parts[1], ","))
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

func newToken(source string, index int, name, hash string, scopes []string) (Token, error) {
	at := name
	if at == "" {
		at = fmt.Sprintf("#%d", index+1)
	}
	fail := func(format string, args ...any) (Token, error) {
		return Token{}, &TokensError{Source: source, Token: at, Problem: fmt.Sprintf(format, args...)}
	}
	if problem := checkName(name); problem != "" {
		return fail("%s", problem)
	}
	raw, err := hex.DecodeString(strings.ToLower(hash))
	if err != nil || len(raw) != sha256.Size {
		return fail("sha256 must be the 64 hex digits of the token's SHA-256 (for example: printf %%s \"$TOKEN\" | sha256sum)")
	}
	if len(scopes) == 0 {
		return fail("has no scopes: give one or more of trigger, read, operate, admin")
	}
	t := Token{Name: name}
	copy(t.Hash[:], raw)
	for _, s := range scopes {
		sc := Scope(strings.TrimSpace(s))
		if !sc.valid() {
			return fail("unknown scope %q: use trigger, read, operate or admin", clip(s))
		}
		if !slices.Contains(t.Scopes, sc) {
			t.Scopes = append(t.Scopes, sc)
		}
	}
	return t, nil
}

// checkName refuses a token name that could not label a metric or a log
// line plainly: 1 to NameMaxLength characters of letters, digits, '-',
// '_' and '.'. It returns the problem, or "".
func checkName(name string) string {
	if name == "" || len(name) > NameMaxLength {
		return fmt.Sprintf("name must be 1 to %d characters long", NameMaxLength)
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return fmt.Sprintf("name %q may hold only letters, digits, '-', '_' and '.'", clip(name))
		}
	}
	return ""
}

// Keyring is the set of tokens a server accepts: the fixed ones (flags)
// and those of a tokens file, read again by Reload. It is safe for
// concurrent use; a lookup never waits for a reload.
type Keyring struct {
	file  string
	fixed []Token
	mu    sync.Mutex // serializes Reload
	set   atomic.Pointer[[]Token]
}

// NewKeyring builds a keyring of the fixed tokens and, when file is not
// "", the tokens of that file. Two tokens may not share a name or a hash.
func NewKeyring(file string, fixed ...Token) (*Keyring, error) {
	k := &Keyring{file: file, fixed: fixed}
	if err := k.Reload(); err != nil {
		return nil, err
	}
	return k, nil
}

// Reload reads the tokens file again and swaps the whole set at once.
// When the file is unreadable or invalid the tokens in force stay, and the
// error says why.
func (k *Keyring) Reload() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	all := slices.Clone(k.fixed)
	if k.file != "" {
		data, err := os.ReadFile(k.file)
		if err != nil {
			return &TokensError{Source: k.file, Problem: "cannot read the tokens file: " + err.Error()}
		}
		ts, err := ParseFile(k.file, data)
		if err != nil {
			return err
		}
		all = append(all, ts...)
	}
	for i, t := range all {
		for _, u := range all[:i] {
			switch {
			case t.Name == u.Name:
				return &TokensError{Source: k.source(), Token: t.Name, Problem: "the name is given to two tokens"}
			case t.Hash == u.Hash:
				return &TokensError{Source: k.source(), Token: t.Name, Problem: fmt.Sprintf("has the same value as token %s", u.Name)}
			}
		}
	}
	k.set.Store(&all)
	return nil
}

func (k *Keyring) source() string {
	if k.file != "" {
		return k.file
	}
	return "tokens"
}

// Len returns the number of tokens in force.
func (k *Keyring) Len() int { return len(*k.set.Load()) }

// Names returns the names of the tokens in force.
func (k *Keyring) Names() []string {
	var out []string
	for _, t := range *k.set.Load() {
		out = append(out, t.Name)
	}
	return out
}

// Authenticate returns the identity of a token value. The value's hash is
// compared with every token's in constant time, so neither which token
// matched nor how much of it leaks through timing.
func (k *Keyring) Authenticate(token string) (Identity, bool) {
	if token == "" {
		return Identity{}, false
	}
	got := sha256.Sum256([]byte(token))
	found := -1
	set := *k.set.Load()
	for i := range set {
		if subtle.ConstantTimeCompare(got[:], set[i].Hash[:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return Identity{}, false
	}
	return Identity{Name: set[found].Name, Scopes: slices.Clone(set[found].Scopes)}, true
}

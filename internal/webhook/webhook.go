// Package webhook checks the webhooks senders such as GitHub, Stripe or
// Shopify post to `taskq serve` (POST /api/v1/webhooks/{source}) and maps
// each to an event: a source is configured in a file (YAML or JSON) with
// how its requests are signed, its secrets (several during a rotation)
// and CEL expressions that give the event's key, its payload and the
// sender's delivery ID from the request's body and headers.
//
// The HTTP API (internal/httpapi) reads the body, asks a Source to verify
// and map it, and pushes the event as any other.
package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.yaml.in/yaml/v3"
)

// Kinds of signature a source may check.
const (
	// KindHMAC is a generic HMAC-SHA256 of the raw body, hex or base64,
	// in a configurable header, optionally after a prefix ("sha256=").
	KindHMAC = "hmac"
	// KindGitHub is GitHub's X-Hub-Signature-256: "sha256=" and the hex
	// HMAC-SHA256 of the body.
	KindGitHub = "github"
	// KindStripe is Stripe's Stripe-Signature: "t=<unix>,v1=<hex>,...",
	// the HMAC-SHA256 of "<t>.<body>", within a tolerance of now.
	KindStripe = "stripe"
)

// Defaults of a source's settings.
const (
	// ToleranceDefault is how far a Stripe signature's timestamp may be
	// from the server's clock.
	ToleranceDefault = 5 * time.Minute
	// CostLimitDefault bounds the cost of evaluating one expression.
	CostLimitDefault = 100_000
	// SecretMinLength is the fewest bytes a secret may have.
	SecretMinLength = 16
	// DeliveryIDMaxBytes bounds a delivery ID.
	DeliveryIDMaxBytes = 256
)

// Errors of Verify and Map. Each is matched with errors.Is.
var (
	// ErrSignatureMissing: the request has no signature header.
	ErrSignatureMissing = errors.New("signature missing")
	// ErrSignatureInvalid: no secret of the source gives the signature.
	ErrSignatureInvalid = errors.New("signature invalid")
	// ErrSignatureStale: the signature's timestamp is out of tolerance.
	ErrSignatureStale = errors.New("signature timestamp out of tolerance")
	// ErrMapping: an expression failed on the request, or gave a value of
	// the wrong type.
	ErrMapping = errors.New("webhook mapping failed")
	// ErrUnknownSource: no source of that name is configured.
	ErrUnknownSource = errors.New("unknown webhook source")
	// ErrInvalidConfig matches *ConfigError.
	ErrInvalidConfig = errors.New("invalid webhook configuration")
)

// RequestError is why a request was refused: one of the sentinels above,
// and what exactly was wrong.
type RequestError struct {
	Err    error
	Detail string
}

func (e *RequestError) Error() string { return e.Err.Error() + ": " + e.Detail }

// Unwrap returns the sentinel.
func (e *RequestError) Unwrap() error { return e.Err }

func refuse(sentinel error, format string, args ...any) error {
	return &RequestError{Err: sentinel, Detail: fmt.Sprintf(format, args...)}
}

// ConfigError says what is wrong with a webhook configuration file.
type ConfigError struct {
	File    string
	Source  string
	Problem string
}

func (e *ConfigError) Error() string {
	if e.Source != "" {
		return fmt.Sprintf("%s: source %q: %s", e.File, e.Source, e.Problem)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Problem)
}

// Is makes errors.Is(err, ErrInvalidConfig) hold.
func (*ConfigError) Is(target error) bool { return target == ErrInvalidConfig }

// SecretConfig is one secret: its value, or where to read it (an
// environment variable or a file), so that the configuration file itself
// need hold none.
type SecretConfig struct {
	Value string `yaml:"value" json:"value"`
	Env   string `yaml:"env" json:"env"`
	File  string `yaml:"file" json:"file"`
}

// SourceConfig is one source of a configuration file.
type SourceConfig struct {
	// Name is the {source} of the URL.
	Name string `yaml:"name" json:"name"`
	// Signature is hmac, github or stripe.
	Signature string `yaml:"signature" json:"signature"`
	// Header (hmac) is the header holding the signature.
	Header string `yaml:"header" json:"header"`
	// Encoding (hmac) is hex (default) or base64.
	Encoding string `yaml:"encoding" json:"encoding"`
	// Prefix (hmac) comes before the signature in the header ("sha256=").
	Prefix string `yaml:"prefix" json:"prefix"`
	// Tolerance (stripe) is how far the timestamp may be from now
	// (default 5m).
	Tolerance string `yaml:"tolerance" json:"tolerance"`
	// Secrets are tried in turn: give two during a rotation.
	Secrets []SecretConfig `yaml:"secrets" json:"secrets"`
	// Key is a CEL expression giving the event's key (a string).
	Key string `yaml:"key" json:"key"`
	// Payload is a CEL expression giving the event's payload (an object;
	// default: the body).
	Payload string `yaml:"payload" json:"payload"`
	// DeliveryID is a CEL expression giving the sender's delivery ID (a
	// string), stored in the event's metadata as webhook.deliveryId.
	DeliveryID string `yaml:"deliveryId" json:"deliveryId"`
}

type configFile struct {
	Sources []SourceConfig `yaml:"sources" json:"sources"`
}

// Source is one configured webhook source. It is immutable.
type Source struct {
	Name       string
	kind       string
	header     string
	base64     bool
	prefix     string
	tolerance  time.Duration
	secrets    [][]byte
	key        *program
	payload    *program
	deliveryID *program
}

// Sources are the configured webhook sources, read from a file and read
// again by Reload. Safe for concurrent use; a lookup never waits for a
// reload.
type Sources struct {
	file   string
	getenv func(string) string
	mu     sync.Mutex
	set    atomic.Pointer[map[string]*Source]
}

// Load reads the sources of file (YAML or JSON). getenv reads the
// environment variables secrets name (nil: os.Getenv).
func Load(file string, getenv func(string) string) (*Sources, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	s := &Sources{file: file, getenv: getenv}
	if err := s.Reload(); err != nil {
		return nil, err
	}
	return s, nil
}

// Reload reads the file again and swaps every source at once. On an error
// the sources in force stay.
func (s *Sources) Reload() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	data, err := os.ReadFile(s.file)
	if err != nil {
		return &ConfigError{File: s.file, Problem: "cannot read: " + err.Error()}
	}
	set, err := Parse(s.file, data, s.getenv)
	if err != nil {
		return err
	}
	s.set.Store(&set)
	return nil
}

// Get returns the source of that name, or nil.
func (s *Sources) Get(name string) *Source {
	if s == nil {
		return nil
	}
	return (*s.set.Load())[name]
}

// Parse reads a configuration (file names it in errors).
func Parse(file string, data []byte, getenv func(string) string) (map[string]*Source, error) {
	var f configFile
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return nil, &ConfigError{File: file, Problem: "not a webhook configuration: " + err.Error()}
	}
	out := map[string]*Source{}
	for _, sc := range f.Sources {
		src, problem := build(sc, getenv)
		if problem != "" {
			return nil, &ConfigError{File: file, Source: sc.Name, Problem: problem}
		}
		if out[src.Name] != nil {
			return nil, &ConfigError{File: file, Source: sc.Name, Problem: "is configured twice"}
		}
		out[src.Name] = src
	}
	return out, nil
}

func build(sc SourceConfig, getenv func(string) string) (*Source, string) {
	if sc.Name == "" || len(sc.Name) > 64 || strings.Trim(sc.Name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") != "" {
		return nil, "name must be 1 to 64 letters, digits, '-', '_' or '.'"
	}
	src := &Source{Name: sc.Name, kind: sc.Signature, prefix: sc.Prefix}
	switch sc.Signature {
	case KindGitHub:
		src.header, src.prefix = "X-Hub-Signature-256", "sha256="
	case KindStripe:
		src.header, src.tolerance = "Stripe-Signature", ToleranceDefault
		if sc.Tolerance != "" {
			d, err := time.ParseDuration(sc.Tolerance)
			if err != nil || d <= 0 {
				return nil, fmt.Sprintf("tolerance %q is not a positive duration (such as 5m)", sc.Tolerance)
			}
			src.tolerance = d
		}
	case KindHMAC:
		if sc.Header == "" {
			return nil, "signature hmac needs header: the request header that carries the signature"
		}
		src.header = sc.Header
		switch sc.Encoding {
		case "", "hex":
		case "base64":
			src.base64 = true
		default:
			return nil, fmt.Sprintf("encoding %q: use hex or base64", sc.Encoding)
		}
	default:
		return nil, fmt.Sprintf("signature %q: use hmac, github or stripe", sc.Signature)
	}
	if sc.Signature != KindHMAC && (sc.Header != "" || sc.Encoding != "" || sc.Prefix != "") {
		return nil, "header, encoding and prefix apply to signature hmac only"
	}
	if sc.Signature != KindStripe && sc.Tolerance != "" {
		return nil, "tolerance applies to signature stripe only"
	}
	if len(sc.Secrets) == 0 {
		return nil, "has no secrets: give one (two during a rotation)"
	}
	for i, s := range sc.Secrets {
		v, problem := secretValue(s, getenv)
		if problem != "" {
			return nil, fmt.Sprintf("secrets[%d]: %s", i, problem)
		}
		src.secrets = append(src.secrets, []byte(v))
	}
	if sc.Key == "" {
		return nil, `needs key: a CEL expression for the event's key, such as "github." + headers["x-github-event"]`
	}
	var problem string
	if src.key, problem = compile("key", sc.Key); problem != "" {
		return nil, problem
	}
	if sc.Payload != "" {
		if src.payload, problem = compile("payload", sc.Payload); problem != "" {
			return nil, problem
		}
	}
	if sc.DeliveryID != "" {
		if src.deliveryID, problem = compile("deliveryId", sc.DeliveryID); problem != "" {
			return nil, problem
		}
	}
	return src, ""
}

func secretValue(s SecretConfig, getenv func(string) string) (string, string) {
	set := 0
	for _, v := range []string{s.Value, s.Env, s.File} {
		if v != "" {
			set++
		}
	}
	if set != 1 {
		return "", "give exactly one of value, env and file"
	}
	v := s.Value
	switch {
	case s.Env != "":
		if v = getenv(s.Env); v == "" {
			return "", fmt.Sprintf("environment variable %s is empty or not set", s.Env)
		}
	case s.File != "":
		raw, err := os.ReadFile(s.File)
		if err != nil {
			return "", fmt.Sprintf("cannot read %s: %v", s.File, err)
		}
		v = strings.TrimRight(string(raw), "\r\n")
	}
	if len(v) < SecretMinLength {
		return "", fmt.Sprintf("is %d bytes long; use at least %d", len(v), SecretMinLength)
	}
	return v, ""
}

// Verify checks the request's signature over its raw body with each of
// the source's secrets. now is the server's time, for Stripe's tolerance.
func (s *Source) Verify(header func(string) string, body []byte, now time.Time) error {
	got := header(s.header)
	if got == "" {
		return refuse(ErrSignatureMissing, "the request has no %s header", s.header)
	}
	if s.kind == KindStripe {
		return s.verifyStripe(got, body, now)
	}
	if !strings.HasPrefix(got, s.prefix) {
		return refuse(ErrSignatureInvalid, "%s does not start with %q", s.header, s.prefix)
	}
	var (
		sig []byte
		err error
	)
	if s.base64 {
		sig, err = base64.StdEncoding.DecodeString(strings.TrimPrefix(got, s.prefix))
	} else {
		sig, err = hex.DecodeString(strings.TrimPrefix(got, s.prefix))
	}
	if err != nil {
		return refuse(ErrSignatureInvalid, "%s is not a signature in %s", s.header, map[bool]string{true: "base64", false: "hex"}[s.base64])
	}
	for _, secret := range s.secrets {
		if hmac.Equal(sig, mac(secret, body)) {
			return nil
		}
	}
	return refuse(ErrSignatureInvalid, "%s does not match the body under any secret of source %q", s.header, s.Name)
}

func mac(secret []byte, parts ...[]byte) []byte {
	m := hmac.New(sha256.New, secret)
	for _, p := range parts {
		m.Write(p)
	}
	return m.Sum(nil)
}

// verifyStripe checks "t=<unix>,v1=<hex>[,v1=<hex>...]": any v1 that is
// the HMAC of "<t>.<body>" under any secret, with t within tolerance.
func (s *Source) verifyStripe(header string, body []byte, now time.Time) error {
	var (
		ts   string
		sigs [][]byte
	)
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			if sig, err := hex.DecodeString(v); err == nil {
				sigs = append(sigs, sig)
			}
		}
	}
	unix, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || len(sigs) == 0 {
		return refuse(ErrSignatureInvalid, "%s is not t=<unix time>,v1=<hex signature>", s.header)
	}
	signedAt := time.Unix(unix, 0)
	if d := now.Sub(signedAt); d > s.tolerance || d < -s.tolerance {
		return refuse(ErrSignatureStale, "%s was made at %s, more than %s from now", s.header, signedAt.UTC().Format(time.RFC3339), s.tolerance)
	}
	for _, secret := range s.secrets {
		want := mac(secret, []byte(ts), []byte("."), body)
		for _, sig := range sigs {
			if hmac.Equal(sig, want) {
				return nil
			}
		}
	}
	return refuse(ErrSignatureInvalid, "no v1 signature of %s matches the body under any secret of source %q", s.header, s.Name)
}

// Event is what a webhook maps to.
type Event struct {
	Key string
	// Payload is the event's payload, a JSON object; nil when the source
	// has no payload expression: the body as sent is the payload.
	Payload map[string]any
	// DeliveryID is the sender's ID of the delivery ("" when the source
	// has no deliveryId expression).
	DeliveryID string
}

// Map evaluates the source's expressions on the decoded body and the
// headers (names in lower case; several values joined with ", ").
func (s *Source) Map(body any, headers map[string]string) (*Event, error) {
	vars := map[string]any{"body": body, "headers": headers, "source": s.Name}
	kv, err := s.key.eval(vars)
	if err != nil {
		return nil, err
	}
	key, ok := kv.(string)
	if !ok {
		return nil, refuse(ErrMapping, "key expression %q gave %T, not a string", clip(s.key.src), kv)
	}
	ev := &Event{Key: key}
	if s.payload == nil {
		if _, ok := body.(map[string]any); !ok {
			return nil, refuse(ErrMapping, "the body is %s, not a JSON object: give the source a payload expression", kind(body))
		}
	} else {
		payload, err := s.payload.eval(vars)
		if err != nil {
			return nil, err
		}
		if ev.Payload, ok = payload.(map[string]any); !ok {
			return nil, refuse(ErrMapping, "payload expression %q gave %s, not a JSON object", clip(s.payload.src), kind(payload))
		}
	}
	if s.deliveryID != nil {
		v, err := s.deliveryID.eval(vars)
		if err != nil {
			return nil, err
		}
		id, ok := v.(string)
		switch {
		case !ok:
			return nil, refuse(ErrMapping, "deliveryId expression %q gave %s, not a string", clip(s.deliveryID.src), kind(v))
		case id == "":
			return nil, refuse(ErrMapping, "deliveryId expression %q gave an empty string", clip(s.deliveryID.src))
		case len(id) > DeliveryIDMaxBytes:
			return nil, refuse(ErrMapping, "deliveryId is %d bytes, over the limit of %d", len(id), DeliveryIDMaxBytes)
		}
		ev.DeliveryID = id
	}
	return ev, nil
}

func kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return "a number"
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

package webhook

import (
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestConfigErrorsNameTheSourceAndTheProblem(t *testing.T) {
	t.Parallel()
	env := func(name string) string {
		if name == "SET" {
			return "a-secret-from-the-env-0123"
		}
		return ""
	}
	const ok = `secrets: [{value: a-secret-0123456789abc}], key: '"k"'`
	cases := map[string]string{
		`sources: [{name: a, signature: sha1, ` + ok + `}]`:                                             `source "a": signature "sha1": use hmac, github or stripe`,
		`sources: [{name: a, signature: hmac, ` + ok + `}]`:                                             "signature hmac needs header",
		`sources: [{name: a, signature: hmac, header: X-S, encoding: b32, ` + ok + `}]`:                 `encoding "b32"`,
		`sources: [{name: a, signature: github, header: X-S, ` + ok + `}]`:                              "apply to signature hmac only",
		`sources: [{name: a, signature: stripe, tolerance: soon, ` + ok + `}]`:                          `tolerance "soon"`,
		`sources: [{name: a, signature: github, key: '"k"'}]`:                                           "has no secrets",
		`sources: [{name: a, signature: github, secrets: [{value: short}], key: '"k"'}]`:                "secrets[0]: is 5 bytes long",
		`sources: [{name: a, signature: github, secrets: [{env: UNSET}], key: '"k"'}]`:                  "environment variable UNSET is empty",
		`sources: [{name: a, signature: github, secrets: [{env: SET, value: x}], key: '"k"'}]`:          "exactly one of value, env and file",
		`sources: [{name: a, signature: github, secrets: [{env: SET}]}]`:                                "needs key",
		`sources: [{name: a, signature: github, secrets: [{env: SET}], key: 'body.'}]`:                  "key expression \"body.\" does not compile",
		`sources: [{name: a, signature: github, secrets: [{env: SET}], key: '"k"', payload: '1 +'}]`:    "payload expression",
		`sources: [{name: 'a/b', signature: github, secrets: [{env: SET}], key: '"k"'}]`:                "name must be",
		`sources: [{name: a, signature: github, ` + ok + `}, {name: a, signature: github, ` + ok + `}]`: "is configured twice",
		`sources: [{name: a, sig: github}]`:                                                             "field sig not found",
	}
	for data, want := range cases {
		_, err := Parse("hooks.yaml", []byte(data), env)
		if err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, ErrInvalidConfig) || !strings.HasPrefix(err.Error(), "hooks.yaml: ") {
			t.Errorf("%s:\n  %v\n  want %q", data, err, want)
		}
	}
}

// An expression's evaluation is bounded in cost: one that would work
// long is refused as a mapping error.
func TestMappingIsBoundedAndTyped(t *testing.T) {
	t.Parallel()
	set, err := Parse("hooks.yaml", []byte(`sources:
  - {name: slow, signature: github, secrets: [{value: a-secret-0123456789abc}],
     key: 'string(body.items.map(x, body.items.map(y, body.items.map(z, x + y + z))).size())'}
  - {name: typed, signature: github, secrets: [{value: a-secret-0123456789abc}], key: 'body.n', deliveryId: 'headers["x-id"]'}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	items := make([]any, 200)
	for i := range items {
		items[i] = float64(i)
	}
	if _, err := set["slow"].Map(map[string]any{"items": items}, nil); !errors.Is(err, ErrMapping) || !strings.Contains(err.Error(), "cost") {
		t.Errorf("an expensive expression: %v", err)
	}
	if _, err := set["typed"].Map(map[string]any{"n": 1.0}, map[string]string{"x-id": "d"}); !errors.Is(err, ErrMapping) || !strings.Contains(err.Error(), "not a string") {
		t.Errorf("a key that is a number: %v", err)
	}
	if _, err := set["typed"].Map(map[string]any{"n": "k"}, map[string]string{"x-id": strings.Repeat("d", DeliveryIDMaxBytes+1)}); !errors.Is(err, ErrMapping) {
		t.Errorf("a delivery ID over its limit: %v", err)
	}
	ev, err := set["typed"].Map(map[string]any{"n": "k"}, map[string]string{"x-id": "d-1"})
	if err != nil || ev.Key != "k" || ev.DeliveryID != "d-1" || ev.Payload != nil {
		t.Errorf("a good mapping: %+v %v", ev, err)
	}
}

func TestStripeToleranceBothWays(t *testing.T) {
	t.Parallel()
	set, err := Parse("hooks.yaml", []byte(`sources: [{name: s, signature: stripe, tolerance: 1m, secrets: [{value: whsec_0123456789abcdef}], key: '"k"'}]`), nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_700_000_000, 0)
	body := []byte(`{}`)
	sig := func(at time.Time) string {
		ts := at.Unix()
		return "t=" + itoa(ts) + ",v1=" + hexMAC("whsec_0123456789abcdef", itoa(ts)+"."+string(body))
	}
	for d, want := range map[time.Duration]error{0: nil, 59 * time.Second: nil, -59 * time.Second: nil, 61 * time.Second: ErrSignatureStale, -61 * time.Second: ErrSignatureStale} {
		h := sig(now.Add(d))
		err := set["s"].Verify(func(string) string { return h }, body, now)
		if !errors.Is(err, want) && !(want == nil && err == nil) {
			t.Errorf("signed %s from now: %v, want %v", d, err, want)
		}
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func hexMAC(secret, msg string) string { return hex.EncodeToString(mac([]byte(secret), []byte(msg))) }

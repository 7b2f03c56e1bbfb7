package auth

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseFileAndAuthenticate(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "tokens.json")
	data := `{"tokens": [
	  {"name": "ci", "sha256": "` + Hash("ci-token-0123456789") + `", "scopes": ["trigger", "read"]},
	  {"name": "ops", "sha256": "` + strings.ToUpper(Hash("ops-token-0123456789")) + `", "scopes": ["admin"]}
	]}`
	if err := os.WriteFile(file, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	flag, err := ParseFlag("--scoped-token", "reader:read:"+Hash("reader-token-0123456789"))
	if err != nil {
		t.Fatal(err)
	}
	k, err := NewKeyring(file, flag)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		token string
		name  string
		has   []Scope
		lacks []Scope
	}{
		{"ci-token-0123456789", "ci", []Scope{ScopeTrigger, ScopeRead}, []Scope{ScopeOperate, ScopeAdmin}},
		{"ops-token-0123456789", "ops", Scopes, nil},
		{"reader-token-0123456789", "reader", []Scope{ScopeRead}, []Scope{ScopeTrigger, ScopeOperate}},
	}
	for _, c := range cases {
		id, ok := k.Authenticate(c.token)
		if !ok || id.Name != c.name {
			t.Fatalf("%s: %v %+v", c.name, ok, id)
		}
		for _, s := range c.has {
			if !id.Has(s) {
				t.Errorf("%s lacks %s", c.name, s)
			}
		}
		for _, s := range c.lacks {
			if id.Has(s) {
				t.Errorf("%s has %s", c.name, s)
			}
		}
	}
	for _, bad := range []string{"", "ci-token-012345678", "ci-token-0123456789x", Hash("ci-token-0123456789")} {
		if _, ok := k.Authenticate(bad); ok {
			t.Errorf("%q authenticated", bad)
		}
	}
}

func TestBadTokensAreRefusedByName(t *testing.T) {
	t.Parallel()
	h := Hash("some-token-0123456789")
	cases := map[string]string{
		"tokens: [{name: a, sha256: " + h + ", scopes: [write]}]":                                                                    `token a: unknown scope "write"`,
		"tokens: [{name: a, sha256: abc, scopes: [read]}]":                                                                           "token a: sha256 must be the 64 hex digits",
		"tokens: [{name: a, sha256: " + h + "}]":                                                                                     "token a: has no scopes",
		"tokens: [{name: 'a b', sha256: " + h + ", scopes: [read]}]":                                                                 "may hold only letters",
		"tokens: [{sha256: " + h + ", scopes: [read]}]":                                                                              "token #1: name must be 1 to 64",
		"tokens: [{name: a, token: x, sha256: " + h + ", scopes: [read]}]":                                                           "field token not found",
		"tokens: [{name: a, sha256: " + h + ", scopes: [read]}, {name: a, sha256: " + strings.Repeat("0", 64) + ", scopes: [read]}]": "token a: the name is given to two tokens",
		"tokens: [{name: a, sha256: " + h + ", scopes: [read]}, {name: b, sha256: " + h + ", scopes: [read]}]":                       "token b: has the same value as token a",
	}
	for data, want := range cases {
		file := filepath.Join(t.TempDir(), "tokens.yaml")
		if err := os.WriteFile(file, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := NewKeyring(file)
		if err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, ErrInvalidTokens) {
			t.Errorf("%s: %v, want %q", data, err, want)
		}
		var te *TokensError
		if !errors.As(err, &te) || te.Source != file {
			t.Errorf("%s: %#v does not name the file", data, err)
		}
	}
	for _, v := range []string{"a:read", "a:read:" + h + ":x", "a::" + h, "a:root:" + h} {
		if _, err := ParseFlag("--scoped-token", v); !errors.Is(err, ErrInvalidTokens) {
			t.Errorf("--scoped-token %s: %v", v, err)
		}
	}
	if _, err := NewKeyring(filepath.Join(t.TempDir(), "missing.yaml")); err == nil || !strings.Contains(err.Error(), "cannot read the tokens file") {
		t.Errorf("a missing file: %v", err)
	}
}

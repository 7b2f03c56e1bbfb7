package webui

import (
	"context"
	"encoding/json"
	"html/template"
	"net/url"
	"strings"
	"testing"

	"github.com/taskq/taskq/internal/redistest"
)

func TestKeyTextEscapesWhatWouldNotShowAsItself(t *testing.T) {
	for key, want := range map[string]template.HTML{
		"order:42":         "order:42",
		"a\u202eb":         `a<span class="esc">⟨U+202E⟩</span>b`,
		"a\u200bb":         `a<span class="esc">⟨U+200B⟩</span>b`,
		"tab\there":        `tab<span class="esc">⟨U+0009⟩</span>here`,
		"nb\u00a0sp":       `nb<span class="esc">⟨U+00A0⟩</span>sp`,
		" pad ":            `<span class="esc">⟨U+0020⟩</span>pad<span class="esc">⟨U+0020⟩</span>`,
		"in side":          "in side",
		"bad\xffbyte":      `bad<span class="esc">⟨0xFF⟩</span>byte`,
		"<b>&\"x\"</b>":    "&lt;b&gt;&amp;&#34;x&#34;&lt;/b&gt;",
		"ünïcødé 注文":       "ünïcødé 注文",
		"\ufffd is itself": "\ufffd is itself",
	} {
		if got := keyText(key); got != want {
			t.Errorf("keyText(%q) = %q, want %q", key, got, want)
		}
	}
}

// A key holding a bidi override or an invisible character is shown with
// it escaped on every page that shows keys, while the release form and the
// links carry the key itself.
func TestKeysWithBidiAndInvisibleCharactersAreShownEscaped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, redistest.Mini(t), envOptions{})
	rlo := e.trigger(ctx, order{ID: "abc\u202edef"})
	zw := e.trigger(ctx, order{ID: "same\u200b"})
	plain := e.trigger(ctx, order{ID: "same"})
	b := e.browser()
	b.signIn(testToken)
	for _, path := range []string{"/ui/keys", "/ui/runs", "/ui/runs/" + rlo, "/ui/runs/" + zw, "/ui/runs/" + plain,
		"/ui/runs/" + rlo + "/cancel", "/ui/keys/release?" + url.Values{"key": {"order:abc\u202edef"}}.Encode()} {
		p := b.get(path)
		if p.status != 200 {
			t.Fatalf("GET %s: %d", path, p.status)
		}
		for _, raw := range []string{"\u202e", "\u200b"} {
			body := p.body
			// The release form carries the key itself, in its hidden field.
			body = strings.ReplaceAll(body, `name="key" value="order:abc`+"\u202e"+`def"`, "")
			if strings.Contains(body, raw) {
				t.Errorf("GET %s shows %q raw", path, raw)
			}
		}
	}
	keys := b.get("/ui/keys").body
	for _, want := range []string{
		`<code class="key-text">order:abc<span class="esc">⟨U+202E⟩</span>def</code>`,
		`<code class="key-text">order:same<span class="esc">⟨U+200B⟩</span></code>`,
		`<code class="key-text">order:same</code>`,
		`href="/ui/keys/release?key=order%3Aabc%E2%80%AEdef`,
	} {
		if !strings.Contains(keys, want) {
			t.Errorf("the keys page lacks %s:\n%s", want, keys)
		}
	}
	release := b.get("/ui/keys/release?" + url.Values{"key": {"order:abc\u202edef"}}.Encode()).body
	if !strings.Contains(release, `name="key" value="order:abc`+"\u202e"+`def"`) {
		t.Errorf("the release form does not carry the key itself:\n%s", release)
	}
}

// An input and a step result with the same value are shown alike: a
// printable character escaped by the encoder that wrote it is shown as the
// character; an escaped control or bidi character stays escaped.
func TestJSONIsShownAlikeWhoeverEscapedIt(t *testing.T) {
	stepResult, _ := json.Marshal(map[string]string{"html": "<b>&</b>"}) // Go's encoder: \u003c
	input := json.RawMessage(`{"html":"<b>&</b>"}`)
	if got, want := pretty(stepResult), pretty(input); got != want {
		t.Errorf("a step result is shown as %s, an input with the same value as %s", got, want)
	}
	for raw, want := range map[string]string{
		`{"a":"\u003cb\u003e"}`:                    "{\n  \"a\": \"<b>\"\n}",
		`{"a":"\u202e\u0007\u2028"}`:               "{\n  \"a\": \"\\u202e\\u0007\\u2028\"\n}",
		`{"a":"\\u003c"}`:                          "{\n  \"a\": \"\\\\u003c\"\n}",
		`{"a":"\u0022\u005c"}`:                     "{\n  \"a\": \"\\u0022\\u005c\"\n}",
		`{"a":"\ud83d\ude00"}`:                     "{\n  \"a\": \"\\ud83d\\ude00\"\n}",
		"{\"a\":\"x\u202ey\U0001F600\U000E0001\"}": "{\n  \"a\": \"x\\u202ey\U0001F600\\udb40\\udc01\"\n}",
		`not json \u003c`:                          `not json \u003c`,
	} {
		if got := pretty(json.RawMessage(raw)); got != want {
			t.Errorf("pretty(%s) = %q, want %q", raw, got, want)
		}
	}
}

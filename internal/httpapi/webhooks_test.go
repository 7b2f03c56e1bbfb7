package httpapi

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/internal/webhook"
	"github.com/taskq/taskq/pkg/task"
)

const (
	ghSecret     = "github-secret-0123456789"
	ghSecretNext = "github-secret-next-0123456789"
	stripeSecret = "whsec_stripe-secret-0123456789"
	shopSecret   = "shop-secret-0123456789abcdef"
)

const webhookConfig = `
sources:
  - name: github
    signature: github
    secrets:
      - value: ` + ghSecret + `
      - env: TEST_GH_SECRET_NEXT
    key: '"github." + headers["x-github-event"]'
    deliveryId: 'headers["x-github-delivery"]'
  - name: stripe
    signature: stripe
    tolerance: 5m
    secrets: [{value: ` + stripeSecret + `}]
    key: '"stripe." + body.type'
    payload: 'body.data.object'
    deliveryId: 'body.id'
  - name: shop
    signature: hmac
    header: X-Shop-Hmac-Sha256
    encoding: base64
    secrets: [{value: ` + shopSecret + `}]
    key: '"shop." + headers["x-shop-topic"]'
    deliveryId: 'headers["x-shop-webhook-id"]'
  - name: num
    signature: hmac
    header: X-Sig
    secrets: [{value: ` + shopSecret + `}]
    key: '"num." + string(body.id) + "." + string(body.ratio)'
`

func sign(secret string, parts ...string) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	for _, p := range parts {
		m.Write([]byte(p))
	}
	return m.Sum(nil)
}

func githubSig(secret, body string) string { return "sha256=" + hex.EncodeToString(sign(secret, body)) }

func stripeSig(secret, body string, at time.Time) string {
	ts := strconv.FormatInt(at.Unix(), 10)
	return "t=" + ts + ",v1=" + hex.EncodeToString(sign(secret, ts, ".", body))
}

// webhookEnv is a server with the test's webhook sources and a task
// subscribed to each source's events, deduplicated by delivery ID.
func webhookEnv(t *testing.T, b *redistest.Backend) (*env, string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "webhooks.yaml")
	writeFile(t, file, []byte(webhookConfig))
	hooks, err := webhook.Load(file, func(name string) string {
		if name == "TEST_GH_SECRET_NEXT" {
			return ghSecretNext
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, b, envOptions{server: Options{Webhooks: hooks, MaxBodyBytes: 4096}})
	e.register(task.Spec{Name: "on-push", Expression: `"gh:" + additional_metadata.webhook.deliveryId`,
		Strategy: task.StrategyTTL, TTLMs: 600000, OnEvents: []string{"github.push"}})
	e.register(task.Spec{Name: "on-paid", Expression: `"stripe:" + additional_metadata.webhook.deliveryId`,
		Strategy: task.StrategyTTL, TTLMs: 600000, OnEvents: []string{"stripe.invoice.paid"}})
	e.register(task.Spec{Name: "on-order", Expression: `"shop:" + additional_metadata.webhook.deliveryId`,
		Strategy: task.StrategyTTL, TTLMs: 600000, OnEvents: []string{"shop.orders/create"}})
	return e, file
}

func (e *env) webhook(source, body string, headers map[string]string) response {
	e.t.Helper()
	h := map[string]string{"Authorization": noHeader}
	for k, v := range headers {
		h[k] = v
	}
	return e.callWith("POST", "/api/v1/webhooks/"+source, body, h)
}

type eventAnswer struct {
	ID   string `json:"id"`
	Key  string `json:"key"`
	Runs []struct {
		Task, Outcome, RunID string
	} `json:"runs"`
}

func decodeEvent(t *testing.T, r response) eventAnswer {
	t.Helper()
	var ev eventAnswer
	if err := json.Unmarshal(r.raw, &ev); err != nil {
		t.Fatalf("%v: %s", err, r.raw)
	}
	if len(ev.Runs) != 1 {
		t.Fatalf("want one run: %s", r.raw)
	}
	return ev
}

// Each kind of signature: a correct one creates the event and its run
// once; the sender's repeat delivery is deduplicated to that run; the
// event's metadata names the source and the delivery.
func TestWebhookCreatesOnceAndDeduplicatesRetries(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e, _ := webhookEnv(t, b)
		body := `{"ref":"refs/heads/main","after":"abc"}`
		gh := map[string]string{"X-GitHub-Event": "push", "X-GitHub-Delivery": "d-1", "X-Hub-Signature-256": githubSig(ghSecret, body)}
		stripeBody := `{"id":"evt_1","type":"invoice.paid","data":{"object":{"invoice":"in_1","amount":1200}}}`
		shopBody := `{"order":42}`
		cases := []struct {
			source, body string
			headers      map[string]string
			task, key    string
		}{
			{"github", body, gh, "on-push", "github.push"},
			{"stripe", stripeBody, map[string]string{"Stripe-Signature": stripeSig(stripeSecret, stripeBody, time.Now())}, "on-paid", "stripe.invoice.paid"},
			{"shop", shopBody, map[string]string{"X-Shop-Topic": "orders/create", "X-Shop-Webhook-Id": "w-9",
				"X-Shop-Hmac-Sha256": base64.StdEncoding.EncodeToString(sign(shopSecret, shopBody))}, "on-order", "shop.orders/create"},
		}
		for _, c := range cases {
			first := decodeEvent(t, e.webhook(c.source, c.body, c.headers).expect(t, http.StatusAccepted))
			if first.Key != c.key || first.Runs[0].Task != c.task || first.Runs[0].Outcome != "created" {
				t.Fatalf("%s: first delivery: %+v", c.source, first)
			}
			again := decodeEvent(t, e.webhook(c.source, c.body, c.headers).expect(t, http.StatusAccepted))
			if again.Runs[0].Outcome != "deduplicated" || again.Runs[0].RunID != first.Runs[0].RunID {
				t.Fatalf("%s: repeat delivery: %+v, want deduplicated to %s", c.source, again, first.Runs[0].RunID)
			}
			ev := e.call("GET", "/api/v1/events/"+first.ID, nil).expect(t, http.StatusOK)
			var stored struct {
				Payload  map[string]any
				Metadata map[string]map[string]string
			}
			_ = json.Unmarshal(ev.raw, &stored)
			if stored.Metadata[WebhookMetadata]["source"] != c.source || stored.Metadata[WebhookMetadata]["deliveryId"] == "" {
				t.Errorf("%s: stored metadata %s", c.source, ev.raw)
			}
			if c.source == "stripe" && stored.Payload["invoice"] != "in_1" {
				t.Errorf("stripe: payload expression not applied: %s", ev.raw)
			}
		}
		if n := e.runCount(); n != len(cases) {
			t.Fatalf("%d runs, want %d", n, len(cases))
		}
		// The second secret of a rotation is accepted too; a new delivery
		// ID makes a new run.
		gh2 := map[string]string{"X-GitHub-Event": "push", "X-GitHub-Delivery": "d-2", "X-Hub-Signature-256": githubSig(ghSecretNext, body)}
		if ev := decodeEvent(t, e.webhook("github", body, gh2).expect(t, http.StatusAccepted)); ev.Runs[0].Outcome != "created" {
			t.Fatalf("a delivery signed with the next secret: %+v", ev)
		}
	})
}

// A wrong, missing or stale signature, an unknown source, a body the
// limits refuse or a mapping that fails: a documented 4xx, and nothing
// written.
func TestWebhookRefusalsWriteNothing(t *testing.T) {
	t.Parallel()
	e, _ := webhookEnv(t, redistest.Mini(t))
	body := `{"ref":"x"}`
	ghHeaders := func(sig string) map[string]string {
		return map[string]string{"X-GitHub-Event": "push", "X-GitHub-Delivery": "d-1", "X-Hub-Signature-256": sig}
	}
	stripeBody := `{"id":"evt_1","type":"invoice.paid","data":{"object":{}}}`
	deep := `{"a":` + strings.Repeat(`[`, 200) + strings.Repeat(`]`, 200) + `}`
	badUTF8 := "{\"ref\":\"\xff\"}"
	cases := []struct {
		name, source, body string
		headers            map[string]string
		status             int
		code               string
	}{
		{"no signature", "github", body, ghHeaders(noHeader), 401, CodeSignatureMissing},
		{"wrong secret", "github", body, ghHeaders(githubSig("not-the-secret-0123456789", body)), 401, CodeSignatureInvalid},
		{"signature of another body", "github", body, ghHeaders(githubSig(ghSecret, `{"ref":"y"}`)), 401, CodeSignatureInvalid},
		{"not hex", "github", body, ghHeaders("sha256=zz"), 401, CodeSignatureInvalid},
		{"no prefix", "github", body, ghHeaders(hex.EncodeToString(sign(ghSecret, body))), 401, CodeSignatureInvalid},
		{"bearer token instead", "github", body, map[string]string{"X-GitHub-Event": "push", "Authorization": "Bearer " + testToken}, 401, CodeSignatureMissing},
		{"stale stripe", "stripe", stripeBody, map[string]string{"Stripe-Signature": stripeSig(stripeSecret, stripeBody, time.Now().Add(-10*time.Minute))}, 401, CodeSignatureStale},
		{"future stripe", "stripe", stripeBody, map[string]string{"Stripe-Signature": stripeSig(stripeSecret, stripeBody, time.Now().Add(10*time.Minute))}, 401, CodeSignatureStale},
		{"stripe wrong secret", "stripe", stripeBody, map[string]string{"Stripe-Signature": stripeSig("whsec_other-0123456789abc", stripeBody, time.Now())}, 401, CodeSignatureInvalid},
		{"stripe malformed", "stripe", stripeBody, map[string]string{"Stripe-Signature": "v1=abc"}, 401, CodeSignatureInvalid},
		{"unknown source", "gitlab", body, ghHeaders(githubSig(ghSecret, body)), 404, CodeWebhookSourceNotFound},
		{"too large", "github", `{"a":"` + strings.Repeat("x", 5000) + `"}`, ghHeaders("sha256=00"), 413, CodeBodyTooLarge},
		{"invalid UTF-8", "github", badUTF8, ghHeaders(githubSig(ghSecret, badUTF8)), 400, CodeMalformedJSON},
		{"too deep", "github", deep, ghHeaders(githubSig(ghSecret, deep)), 400, CodeInvalidField},
		{"not JSON", "github", `{"a":`, ghHeaders(githubSig(ghSecret, `{"a":`)), 400, CodeMalformedJSON},
		{"no event header", "github", body, map[string]string{"X-GitHub-Delivery": "d", "X-Hub-Signature-256": githubSig(ghSecret, body)}, 422, CodeWebhookMapping},
		{"body an array", "github", `[1]`, ghHeaders(githubSig(ghSecret, `[1]`)), 422, CodeWebhookMapping},
		{"stripe type missing", "stripe", `{"id":"e"}`, map[string]string{"Stripe-Signature": stripeSig(stripeSecret, `{"id":"e"}`, time.Now())}, 422, CodeWebhookMapping},
	}
	before := e.snapshot()
	for _, c := range cases {
		r := e.webhook(c.source, c.body, c.headers)
		if r.status != c.status || r.str("error") != c.code {
			t.Errorf("%s: %d %s, want %d %s", c.name, r.status, r.raw, c.status, c.code)
		}
	}
	if after := e.snapshot(); after != before {
		t.Fatalf("refused webhooks wrote to Redis:\nbefore:\n%safter:\n%s", before, after)
	}
}

// SIGHUP's Reload reads the sources again: a source added to the file is
// served, a secret removed is refused; a broken file keeps what was in
// force.
func TestWebhookSourcesReload(t *testing.T) {
	t.Parallel()
	e, file := webhookEnv(t, redistest.Mini(t))
	body := `{"n":1}`
	h := map[string]string{"X-GitHub-Event": "ping", "X-GitHub-Delivery": "p-1", "X-Hub-Signature-256": githubSig(ghSecret, body)}
	e.webhook("github", body, h).expect(t, http.StatusAccepted)
	e.webhook("gitea", body, h).expect(t, http.StatusNotFound)
	next := fmt.Sprintf(`{"sources": [
	  {"name": "github", "signature": "github", "secrets": [{"value": %q}], "key": "\"github.\" + headers[\"x-github-event\"]"},
	  {"name": "gitea", "signature": "hmac", "header": "X-Gitea-Signature", "secrets": [{"value": %q}], "key": "\"gitea.push\""}
	]}`, ghSecretNext, shopSecret)
	writeFile(t, file, []byte(next))
	if err := e.s.Reload(); err != nil {
		t.Fatal(err)
	}
	e.webhook("github", body, h).expect(t, http.StatusUnauthorized)
	e.webhook("gitea", body, map[string]string{"X-Gitea-Signature": hex.EncodeToString(sign(shopSecret, body))}).expect(t, http.StatusAccepted)
	writeFile(t, file, []byte("sources: [{name: gitea, signature: sha1}]"))
	if err := e.s.Reload(); err == nil || !strings.Contains(err.Error(), `signature "sha1"`) {
		t.Fatalf("reload of a broken file: %v", err)
	}
	e.webhook("gitea", body, map[string]string{"X-Gitea-Signature": hex.EncodeToString(sign(shopSecret, body))}).expect(t, http.StatusAccepted)
	_ = os.Remove(file)
}

// A whole number of the body reaches the expressions as an integer, so
// string(body.id) is its digits; a fraction stays a double.
func TestWebhookNumbersAreIntegersWhenWhole(t *testing.T) {
	t.Parallel()
	e, _ := webhookEnv(t, redistest.Mini(t))
	body := `{"id": 12345678901, "ratio": 0.5}`
	r := e.webhook("num", body, map[string]string{"X-Sig": hex.EncodeToString(sign(shopSecret, body))}).expect(t, http.StatusAccepted)
	if got := r.str("key"); got != "num.12345678901.0.5" {
		t.Fatalf("key %q, want num.12345678901.0.5", got)
	}
}

// An event pushed with a token may not pass for a webhook's: its metadata
// may not set the field a signed webhook writes.
func TestPushedEventsCannotClaimAWebhookSource(t *testing.T) {
	t.Parallel()
	e := newEnv(t, redistest.Mini(t), envOptions{})
	before := e.snapshot()
	for _, body := range []string{
		`{"key":"github.push","metadata":{"webhook":{"source":"github","deliveryId":"d-1"}}}`,
		`{"events":[{"key":"a"},{"key":"github.push","metadata":{"webhook":"x"}}]}`,
	} {
		r := e.call("POST", "/api/v1/events", body).expect(t, http.StatusBadRequest)
		if r.str("error") != CodeInvalidField || !strings.Contains(r.str("field"), "metadata.webhook") {
			t.Errorf("%s: %s", body, r.raw)
		}
	}
	if after := e.snapshot(); after != before {
		t.Fatal("a refused push wrote to Redis")
	}
	e.call("POST", "/api/v1/events", `{"key":"k","metadata":{"webhooks":1,"note":"webhook"}}`).expect(t, http.StatusAccepted)
}

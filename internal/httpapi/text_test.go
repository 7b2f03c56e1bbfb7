package httpapi

import (
	"net/http"
	"strings"
	"testing"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/task"
)

func TestLoneSurrogateAndInvalidUTF8Offsets(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int{
		`"abc"`: -1, `"\ud83d\ude00"`: -1, `"\uD83D\uDE00"`: -1, `"\ufffd"`: -1, `"\\ud800"`: -1,
		`{"a":"\u0041\ud800"}`: 12, `"\udc00"`: 1, `"\ud800"`: 1, `"\ud800\u0041"`: 1, `"\ud800\ud800"`: 1,
		`"\ud800x"`: 1, `"\ud800`: 1, `"\u12`: -1, `\ud800`: -1, `"x\"\ud800"`: 4, `"x" "\udfff"`: 5,
		`"\ud83d\ude00\udc00"`: 13,
	} {
		if got := loneSurrogate([]byte(in)); got != want {
			t.Errorf("loneSurrogate(%s) = %d, want %d", in, got, want)
		}
	}
	for in, want := range map[string]int{
		"abc": -1, "\ufffd": -1, "é": -1, "a\xff": 1, "\xfe": 0, "ab\xc3": 2, "\xed\xa0\x80": 0, "é\x80": 2,
	} {
		if got := invalidUTF8([]byte(in)); got != want {
			t.Errorf("invalidUTF8(%q) = %d, want %d", in, got, want)
		}
		if got := invalidUTF8String(in); got != want {
			t.Errorf("invalidUTF8String(%q) = %d, want %d", in, got, want)
		}
	}
}

// A body that is not valid UTF-8, or that escapes half a surrogate pair,
// is refused with 400 naming the byte offset, on every route that takes a
// body, and writes nothing; so is a path that decodes to invalid UTF-8.
// "\xff", "\xfe", "\ud800" and "\ufffd" can no longer derive one key: only
// the real U+FFFD is accepted.
func TestInvalidTextIsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, redistest.Mini(t), envOptions{})
	e.register(task.Spec{Name: "charge", Expression: `"charge:" + input.orderId`, Strategy: task.StrategyTTL, TTLMs: 60000, OnEvents: []string{"order.paid"}})
	before := e.snapshot()
	cases := []struct {
		path, body string
		offset     int
		message    string
	}{
		{"/api/v1/tasks/charge/runs", "{\"input\":{\"orderId\":\"\xff\xfeutf\"}}", 21, "byte 0xff at offset 21"},
		{"/api/v1/tasks/charge/runs", "{\"input\":{\"orderId\":\"ok\xfe\"}}", 23, "byte 0xfe at offset 23"},
		{"/api/v1/tasks/charge/runs", `{"input":{"orderId":"\ud800"}}`, 21, `\ud800 at offset 21`},
		{"/api/v1/tasks/charge/runs", `{"input":{"orderId":"\udc00\ud800"}}`, 21, `\udc00 at offset 21`},
		{"/api/v1/tasks/charge/runs", `{"runs":[{"input":{"orderId":"a"}},{"input":{"orderId":"\uDBFFx"}}]}`, 56, `\uDBFF at offset 56`},
		{"/api/v1/events", "{\"key\":\"order.paid\",\"payload\":{\"orderId\":\"\xc3\"}}", 42, "byte 0xc3 at offset 42"},
		{"/api/v1/events", `{"key":"order.paid","payload":{"\ud800":"x"}}`, 32, `\ud800 at offset 32`},
		{"/api/v1/keys/k/signal", "{\"payload\":\"\xed\xa0\x80\"}", 12, "byte 0xed at offset 12"},
	}
	for _, c := range cases {
		r := e.call("POST", c.path, c.body).expect(t, http.StatusBadRequest)
		if r.str("error") != CodeMalformedJSON || !strings.Contains(r.str("message"), c.message) || r.body["offset"] != float64(c.offset) {
			t.Errorf("POST %s %q: %s, want malformed_json naming %q and offset %d", c.path, c.body, r.raw, c.message, c.offset)
		}
	}
	for _, p := range []string{"/api/v1/keys/ab%FF", "/api/v1/runs/%C3/result", "/api/v1/keys/%C3%28/signal"} {
		method := "GET"
		if strings.HasSuffix(p, "/signal") {
			method = "POST"
		}
		r := e.call(method, p, `{"payload":1}`).expect(t, http.StatusBadRequest)
		if r.str("error") != CodeInvalidParameter || !strings.Contains(r.str("message"), "not valid UTF-8") || r.body["offset"] == nil {
			t.Errorf("GET %s: %s", p, r.raw)
		}
	}
	if after := e.snapshot(); after != before {
		t.Fatalf("refused requests wrote to Redis:\nbefore:\n%safter:\n%s", before, after)
	}
	r := e.call("POST", "/api/v1/tasks/charge/runs", `{"input":{"orderId":"\ufffd"}}`).expect(t, http.StatusCreated)
	run := e.call("GET", "/api/v1/runs/"+r.str("runId"), nil).expect(t, http.StatusOK)
	if run.str("idempotencyKey") != "charge:\ufffd" {
		t.Fatalf("run: %s", run.raw)
	}
	e.call("POST", "/api/v1/tasks/charge/runs", `{"input":{"orderId":"\ud83d\ude00"}}`).expect(t, http.StatusCreated)
}

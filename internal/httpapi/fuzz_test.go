package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The request decoders meet whatever a client sends. For any body and
// Content-Type they must not panic, must answer a failure with a 4xx status,
// an error code and a message, and must hand the handlers only JSON objects
// for the fields that must be objects (event fields go to the ingester,
// which checks them, as sent). go test runs the seeds below;
// go test -fuzz=FuzzDecodeTriggerRequest (or FuzzDecodePushRequest) explores
// further, and a crash it finds belongs in testdata/fuzz as a regression.

var decodeSeeds = []string{
	`{"input":{"id":"1"}}`,
	`{"input":{"id":"1"},"additionalMetadata":{"tenant":"a"},"onConflict":"attach"}`,
	`{"runs":[{"input":{"id":"1"}},{"input":{"id":"2"},"additionalMetadata":null}]}`,
	`{"key":"order.created","payload":{"id":"1"},"metadata":{}}`,
	`{"events":[{"key":"a","payload":{}},{"payload":{}}]}`,
	``, ` `, `null`, `[]`, `"x"`, `1`, `{`, `{"input":`, `{"input":[1]}`, `{"input":"s"}`,
	`{"input":{}} {"input":{}}`, `{"unknown":1}`, `{"runs":{}}`, `{"runs":[1]}`, `{"key":1}`,
	`{"events":[{"key":"k","payload":[1]}]}`, `{"input":{"a":` + strings.Repeat(`[`, 200) + strings.Repeat(`]`, 200) + `}}`,
	"{\"input\":{\"id\":\"\xff\xfe\"}}", `{"input":{"id":"\ud800"}}`,
}

func fuzzServer() *Server { return &Server{opts: Options{MaxBodyBytes: 4096}} }

func decode(t *testing.T, s *Server, contentType, body string, dst any) *apiError {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, "/api/v1/x", strings.NewReader(body))
	if contentType != "" {
		r.Header.Set("Content-Type", contentType)
	}
	e := s.decodeBody(httptest.NewRecorder(), r, dst)
	if e != nil {
		checkAPIError(t, e)
	}
	return e
}

func checkAPIError(t *testing.T, e *apiError) {
	t.Helper()
	if e.status < 400 || e.status > 499 || e.Code == "" || e.Message == "" {
		t.Fatalf("decoder failure %+v lacks a 4xx status, a code or a message", e)
	}
	if _, err := json.Marshal(e); err != nil {
		t.Fatalf("error %+v does not encode: %v", e, err)
	}
}

func checkObject(t *testing.T, raw json.RawMessage, e *apiError) {
	t.Helper()
	if e != nil {
		checkAPIError(t, e)
		return
	}
	if len(raw) == 0 || raw[0] != '{' || !json.Valid(raw) {
		t.Fatalf("field accepted as a JSON object: %q", raw)
	}
}

func FuzzDecodeTriggerRequest(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add("application/json", s)
	}
	f.Add("text/plain", `{"input":{}}`)
	f.Add("application/vnd.x+json; charset=utf-8", `{"input":{}}`)
	f.Add(";;;", `{}`)
	s := fuzzServer()
	f.Fuzz(func(t *testing.T, contentType, body string) {
		var req triggerRequest
		if e := decode(t, s, contentType, body, &req); e != nil {
			return
		}
		in, e := objectField(req.Input, "", -1, "input")
		checkObject(t, in, e)
		md, e := objectField(req.AdditionalMetadata, "", -1, "additionalMetadata")
		checkObject(t, md, e)
		if req.Runs == nil {
			return
		}
		runs, e := decodeBatch[runRequest]("runs", "run", req.Runs, 100)
		if e != nil {
			checkAPIError(t, e)
			return
		}
		for i, r := range runs {
			in, e := objectField(r.Input, "runs", i, "input")
			checkObject(t, in, e)
			md, e := objectField(r.AdditionalMetadata, "runs", i, "additionalMetadata")
			checkObject(t, md, e)
		}
	})
}

func FuzzDecodePushRequest(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add("application/json", s)
	}
	s := fuzzServer()
	f.Fuzz(func(t *testing.T, contentType, body string) {
		var req pushRequest
		if e := decode(t, s, contentType, body, &req); e != nil {
			return
		}
		single := req.Events == nil
		items := []eventRequest{{Key: req.Key, Payload: req.Payload, Metadata: req.Metadata}}
		if !single {
			var e *apiError
			if items, e = decodeBatch[eventRequest]("events", "event", req.Events, 100); e != nil {
				checkAPIError(t, e)
				return
			}
		}
		for i, r := range items {
			idx := i
			if single {
				idx = -1
			}
			in, e := eventInput(r, idx)
			if e != nil {
				checkAPIError(t, e)
				continue
			}
			if in.Key != *r.Key {
				t.Fatalf("event key %q became %q", *r.Key, in.Key)
			}
			// The ingester validates payload and metadata; they reach it
			// as sent, null as absent.
			for _, f := range [][2]json.RawMessage{{r.Payload, in.Payload}, {r.Metadata, in.Metadata}} {
				sent, passed := f[0], f[1]
				if string(bytes.TrimSpace(sent)) == "null" {
					sent = nil
				}
				if !bytes.Equal(sent, passed) {
					t.Fatalf("event field %q reached the ingester as %q", f[0], passed)
				}
			}
		}
	})
}

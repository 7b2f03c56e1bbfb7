package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"reflect"
	"strings"
)

// decodeBody reads a JSON object into dst, strictly: the body must be
// JSON, within MaxBodyBytes, a single object, with no unknown fields and
// every field of its declared type. The error says which of these failed.
func (s *Server) decodeBody(w http.ResponseWriter, r *http.Request, dst any) *apiError {
	data, e := s.readBody(w, r)
	if e != nil {
		return e
	}
	if e := checkBodyText(data); e != nil {
		return e
	}
	return decodeStrict(data, dst, "")
}

// readBody reads a JSON body as sent: its Content-Type must say JSON, it
// must arrive within MaxBodyBytes and the read deadline, and not be
// empty. Its text is not checked yet (checkBodyText).
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, *apiError) {
	if e := checkContentType(r.Header.Get("Content-Type")); e != nil {
		return nil, e
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes))
	var (
		tooBig *http.MaxBytesError
		ne     net.Error
	)
	switch {
	case errors.As(err, &tooBig):
		return nil, newError(http.StatusRequestEntityTooLarge, CodeBodyTooLarge,
			"request body is over the limit of %d bytes", tooBig.Limit)
	case errors.As(err, &ne) && ne.Timeout():
		// The connection's read deadline (Options.ReadTimeout) passed
		// before the body was in.
		return nil, newError(http.StatusRequestTimeout, CodeRequestTimeout,
			"the request body did not arrive within %s (ReadTimeout, headers included)", s.opts.ReadTimeout)
	case err != nil:
		return nil, newError(http.StatusBadRequest, CodeMalformedJSON, "reading the request body: %v", err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, newError(http.StatusBadRequest, CodeEmptyBody, "request body is empty; send a JSON object")
	}
	return data, nil
}

// checkContentType accepts application/json and the JSON-based types of
// the +json suffix (application/cloudevents+json, as webhook sources send),
// in UTF-8, the only charset JSON has; a missing Content-Type is refused,
// since a body of unknown type is not read as JSON on a guess.
func checkContentType(ct string) *apiError {
	if ct == "" {
		return newError(http.StatusUnsupportedMediaType, CodeUnsupportedMediaType,
			"the request has no Content-Type; send Content-Type: application/json")
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || (mt != "application/json" && !(strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))) {
		return newError(http.StatusUnsupportedMediaType, CodeUnsupportedMediaType,
			"Content-Type %s is not JSON; send application/json", quote(ct))
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return newError(http.StatusUnsupportedMediaType, CodeUnsupportedMediaType,
			"Content-Type %s: JSON is read in UTF-8 only; send charset=utf-8 or no charset", quote(ct))
	}
	return nil
}

// decodeStrict decodes one JSON object into dst with no unknown fields and
// nothing after it. at is where the object sits in the request body ("" for
// the body itself, "runs[2]" for an item of a batch); errors name fields
// from there.
func decodeStrict(data []byte, dst any, at string) *apiError {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return decodeError(err, at)
	}
	if _, err := dec.Token(); err != io.EOF {
		return newError(http.StatusBadRequest, CodeMalformedJSON, "request body has data after its JSON object")
	}
	return nil
}

// decodeBatch checks the size of a batch (the items of the field list) and
// decodes its items one by one, strictly, so that an error names the item
// at fault ("runs[2].inptu") and its index.
func decodeBatch[T any](list, noun string, items []json.RawMessage, limit int) ([]T, *apiError) {
	switch {
	case len(items) == 0:
		e := newError(http.StatusBadRequest, CodeInvalidField, "field %q is empty; send at least one %s", list, noun)
		e.Field = list
		return nil, e
	case len(items) > limit:
		return nil, newError(http.StatusBadRequest, CodeBatchTooLarge, "batch has %d %ss, over the limit of %d", len(items), noun, limit)
	}
	out := make([]T, len(items))
	for i, raw := range items {
		if e := decodeStrict(raw, &out[i], fmt.Sprintf("%s[%d]", list, i)); e != nil {
			return nil, e.at(i)
		}
	}
	return out, nil
}

func decodeError(err error, at string) *apiError {
	var (
		syntax *json.SyntaxError
		typ    *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &syntax):
		return newError(http.StatusBadRequest, CodeMalformedJSON,
			"request body is not valid JSON: %s (at byte %d)", strings.TrimPrefix(syntax.Error(), "json: "), syntax.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return newError(http.StatusBadRequest, CodeMalformedJSON, "request body is not valid JSON: it ends in the middle of a value")
	case errors.As(err, &typ):
		if typ.Field == "" && at == "" {
			return newError(http.StatusBadRequest, CodeMalformedJSON, "request body must be a JSON object, not %s", article(typ.Value))
		}
		name := joinField(at, typ.Field)
		e := newError(http.StatusBadRequest, CodeInvalidField, "field %s must be %s, not %s", quote(name), goTypeName(typ.Type), article(typ.Value))
		e.Field = name
		return e
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := joinField(at, strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`))
		e := newError(http.StatusBadRequest, CodeInvalidField, "unknown field %s", quote(name))
		e.Field = clip(name)
		return e
	}
	return newError(http.StatusBadRequest, CodeMalformedJSON, "request body is not valid JSON: %v", err)
}

func joinField(at, field string) string {
	switch {
	case at == "":
		return field
	case field == "":
		return at
	}
	return at + "." + field
}

// article turns a JSON kind as encoding/json names it ("string", "number
// 1.5", "array") into words.
func article(v string) string {
	kind, _, _ := strings.Cut(v, " ")
	switch kind {
	case "array", "object":
		return "an " + kind
	case "bool":
		return "a boolean"
	case "null":
		return "null"
	}
	return "a " + kind
}

func goTypeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int64, reflect.Int32, reflect.Uint, reflect.Uint64, reflect.Float64:
		return "a number"
	case reflect.Pointer:
		return goTypeName(t.Elem())
	}
	return t.String()
}

// objectField checks that field (of the item index of list, or of the
// body when index < 0) holds a JSON object; absent or null means {}.
func objectField(raw json.RawMessage, list string, index int, field string) (json.RawMessage, *apiError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage("{}"), nil
	}
	if raw[0] != '{' {
		kind := "a number"
		switch raw[0] {
		case '[':
			kind = "an array"
		case '"':
			kind = "a string"
		case 't', 'f':
			kind = "a boolean"
		}
		return nil, newError(http.StatusBadRequest, CodeInvalidField, "field %q must be a JSON object, not %s",
			itemField(list, index, field), kind).atItem(list, index, field)
	}
	return raw, nil
}

// itemField names field as the request wrote it: field itself for a single
// item (index < 0), "list[index].field" for an item of a batch.
func itemField(list string, index int, field string) string {
	if index < 0 {
		return field
	}
	return fmt.Sprintf("%s[%d].%s", list, index, field)
}

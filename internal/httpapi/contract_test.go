package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
)

// The HTTP tests check every answer they get against api/openapi.yaml with
// kin-openapi's validator (env.callWith does it), so that the server and
// its published contract cannot drift apart: an undocumented status, a
// field the schema does not list (response schemas are closed with
// additionalProperties: false), a wrong type or format, or an error that
// is not the JSON Error object fails the test that received it.

var contract struct {
	once   sync.Once
	doc    *openapi3.T
	router routers.Router
	err    error
}

// loadContract reads and validates the OpenAPI document once per process.
func loadContract() (*openapi3.T, routers.Router, error) {
	contract.once.Do(func() {
		loader := openapi3.NewLoader()
		doc, err := loader.LoadFromFile(filepath.Join("..", "..", "api", "openapi.yaml"))
		if err != nil {
			contract.err = fmt.Errorf("api/openapi.yaml: %w", err)
			return
		}
		if err := doc.Validate(loader.Context); err != nil {
			contract.err = fmt.Errorf("api/openapi.yaml is not a valid OpenAPI document: %w", err)
			return
		}
		doc.Servers = nil // match paths whatever the test server's address
		r, err := legacy.NewRouter(doc)
		if err != nil {
			contract.err = err
			return
		}
		contract.doc, contract.router = doc, r
	})
	return contract.doc, contract.router, contract.err
}

// routingPath is the path to find req's operation by in the document: the
// escaped path, with every wildcard value the server would take (a key
// with slashes, a segment with escapes) replaced by a plain one, since
// the document's router matches decoded single segments. Segments stay
// empty where they are empty.
func routingPath(method, escaped string) string {
	segs := strings.Split(escaped, "/")
	if len(segs) > 4 && segs[1] == "api" && segs[2] == "v1" && segs[3] == "keys" {
		rest := segs[4:]
		suffix := ""
		if method == http.MethodPost && len(rest) > 1 && rest[len(rest)-1] == "signal" {
			rest, suffix = rest[:len(rest)-1], "/signal"
		}
		key := "k"
		if strings.Join(rest, "/") == "" {
			key = ""
		}
		return "/api/v1/keys/" + key + suffix
	}
	for i, s := range segs {
		if strings.Contains(s, "%") {
			segs[i] = "x"
		}
	}
	return strings.Join(segs, "/")
}

// checkContract returns why an answer to req breaks the document, or nil.
func checkContract(req *http.Request, status int, header http.Header, body []byte) error {
	doc, router, err := loadContract()
	if err != nil {
		return err
	}
	probe := req.Clone(context.Background())
	probe.URL.Path = routingPath(req.Method, req.URL.EscapedPath())
	probe.URL.RawPath = ""
	route, params, err := findRoute(router, probe)
	if err != nil && otherMethod(router, probe) {
		err = routers.ErrMethodNotAllowed
	}
	if err != nil {
		// Not an operation of the document: only a JSON error may answer.
		allowed := []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound}
		if errors.Is(err, routers.ErrMethodNotAllowed) {
			allowed = []int{http.StatusUnauthorized, http.StatusMethodNotAllowed}
			if status == http.StatusMethodNotAllowed && header.Get("Allow") == "" {
				return errors.New("405 without an Allow header")
			}
		}
		if !slices.Contains(allowed, status) {
			return fmt.Errorf("%s %s is no operation of the document (%v) and was answered %d, not one of %v", req.Method, probe.URL.Path, err, status, allowed)
		}
		return checkErrorBody(doc, req.Method, header, body)
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: probe, PathParams: params, Route: route},
		Status:                 status,
		Header:                 header,
		Body:                   io.NopCloser(bytes.NewReader(body)),
		Options: &openapi3filter.Options{
			IncludeResponseStatus:   true,
			MultiError:              true,
			SchemaValidationOptions: []openapi3.SchemaValidationOption{openapi3.EnableFormatValidation()},
		},
	}
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		return fmt.Errorf("operation %s: %w", route.Operation.OperationID, err)
	}
	if status >= 400 {
		return checkErrorBody(doc, req.Method, header, body)
	}
	return nil
}

// checkErrorBody requires the document's Error object as JSON.
func checkErrorBody(doc *openapi3.T, method string, header http.Header, body []byte) error {
	if ct := header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		return fmt.Errorf("an error answer of Content-Type %q, not JSON", ct)
	}
	if method == http.MethodHead {
		return nil
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("an error answer that is not JSON: %v: %.200s", err, body)
	}
	return doc.Components.Schemas["Error"].Value.VisitJSON(v, openapi3.MultiErrors())
}

// otherMethod reports whether the path of req is an operation of the
// document under another method.
func otherMethod(router routers.Router, req *http.Request) bool {
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		if m == req.Method {
			continue
		}
		probe := req.Clone(context.Background())
		probe.Method = m
		if _, _, err := findRoute(router, probe); err == nil {
			return true
		}
	}
	return false
}

// findRoute is the document router's FindRoute, held to the server's
// matching: the router forgives a trailing slash and a missing last
// parameter ("/api/v1/events" for "/api/v1/events/{id}"); the server
// matches segment for segment.
func findRoute(router routers.Router, req *http.Request) (*routers.Route, map[string]string, error) {
	route, params, err := router.FindRoute(req)
	if err == nil && strings.Count(req.URL.Path, "/") != strings.Count(route.Path, "/") {
		// A path ending in "/" whose list route the router preferred
		// ("/api/v1/keys/" for "/api/v1/keys") is the operation whose last
		// parameter is empty, as the server matches it.
		if strings.HasSuffix(req.URL.Path, "/") {
			probe := req.Clone(context.Background())
			probe.URL.Path += "_"
			if r, p, err := router.FindRoute(probe); err == nil && strings.Count(probe.URL.Path, "/") == strings.Count(r.Path, "/") {
				return r, p, nil
			}
		}
		return nil, nil, &routers.RouteError{Reason: routers.ErrPathNotFound.Error()}
	}
	return route, params, err
}

// Package fieldfilter reads and applies the filters on a run's input or
// metadata fields that client.ListOptions.Where takes, as
// "input.customer=42"; the command line and the HTTP API check them with
// Parse before they reach the client. Errors name the filter and the
// problem; the client wraps them in a *client.ListOptionError.
package fieldfilter

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// The sources a Filter reads.
const (
	Input    = "input"
	Metadata = "metadata"
)

// Filter keeps the runs whose input (or additional metadata) has a
// field equal to a value, as "input.customer=42" or "metadata.source=web"
// say it (see Parse).
type Filter struct {
	// Source is Input or Metadata.
	Source string
	// Path names the field, one object key per element: "customer.id" is
	// ["customer", "id"].
	Path []string
	// Value is compared with the field. A string field matches its text; a
	// number matches a Value that is the same number (42 matches 42.0); true,
	// false and null match their JSON. A Value in double quotes ("\"42\"")
	// matches only a string field with the quoted text. Objects and arrays
	// never match.
	Value string
}

// Parse reads a filter written "input.<path>=<value>" or
// "metadata.<path>=<value>", the path's object keys joined by dots; the
// value is everything after the first "=" (it may be empty).
func Parse(s string) (Filter, error) {
	bad := func(problem string) (Filter, error) {
		return Filter{}, fmt.Errorf("%s: %s", strconv.Quote(clipText(s)), problem)
	}
	field, value, ok := strings.Cut(s, "=")
	if !ok {
		return bad("write input.<field>=<value> or metadata.<field>=<value>")
	}
	source, path, _ := strings.Cut(field, ".")
	if source != Input && source != Metadata {
		return bad(fmt.Sprintf("the field must start with %q or %q", Input+".", Metadata+"."))
	}
	f := Filter{Source: source, Path: strings.Split(path, "."), Value: value}
	for _, p := range f.Path {
		if p == "" {
			return bad("the field's path has an empty name; write input.customer.id=42")
		}
	}
	return f, nil
}

// String writes the filter as Parse reads it.
func (f Filter) String() string {
	return f.Source + "." + strings.Join(f.Path, ".") + "=" + f.Value
}

// Check reports a filter that Parse would not give back as it is.
func (f Filter) Check() error {
	if _, err := Parse(f.String()); err != nil {
		return err
	}
	if strings.Contains(strings.Join(f.Path, ""), "=") {
		return fmt.Errorf("%s: a field name must not contain \"=\"", strconv.Quote(clipText(f.String())))
	}
	return nil
}

// Matches reports whether the JSON object doc has the field at the value.
func (f Filter) Matches(doc map[string]any) bool {
	var v any = doc
	for _, p := range f.Path {
		m, ok := v.(map[string]any)
		if !ok {
			return false
		}
		if v, ok = m[p]; !ok {
			return false
		}
	}
	want := f.Value
	if len(want) >= 2 && want[0] == '"' {
		var s string
		if json.Unmarshal([]byte(want), &s) == nil {
			got, ok := v.(string)
			return ok && got == s
		}
	}
	switch x := v.(type) {
	case string:
		return x == want
	case json.Number:
		if string(x) == want {
			return true
		}
		a, err1 := strconv.ParseFloat(string(x), 64)
		b, err2 := strconv.ParseFloat(want, 64)
		return err1 == nil && err2 == nil && a == b
	case bool:
		return strconv.FormatBool(x) == want
	case nil:
		return want == "null"
	}
	return false
}

func clipText(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

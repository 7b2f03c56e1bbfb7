package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/taskq/taskq/internal/admission"
)

// maxInputFileBytes bounds what --input/--data read from a file or stdin;
// the server's limits are far lower, this only stops a runaway pipe.
const maxInputFileBytes = 64 << 20

// readSource reads a flag value given as literal text, @file or - (stdin).
func readSource(flag, value string, stdin io.Reader) ([]byte, error) {
	switch {
	case value == "-":
		b, err := io.ReadAll(io.LimitReader(stdin, maxInputFileBytes+1))
		if err != nil {
			return nil, usageErrorf("%s -: reading stdin: %v", flag, err)
		}
		if len(b) > maxInputFileBytes {
			return nil, usageErrorf("%s -: more than %d bytes on stdin", flag, maxInputFileBytes)
		}
		return b, nil
	case strings.HasPrefix(value, "@"):
		name := value[1:]
		if name == "" {
			return nil, usageErrorf("%s @: missing file name after @", flag)
		}
		f, err := os.Open(name)
		if err != nil {
			return nil, usageErrorf("%s %s: %v", flag, value, err)
		}
		defer f.Close()
		b, err := io.ReadAll(io.LimitReader(f, maxInputFileBytes+1))
		if err != nil {
			return nil, usageErrorf("%s %s: %v", flag, value, err)
		}
		if len(b) > maxInputFileBytes {
			return nil, usageErrorf("%s %s: file is over %d bytes", flag, value, maxInputFileBytes)
		}
		return b, nil
	}
	return []byte(value), nil
}

// readJSON reads a flag's JSON value (literal, @file or -) and checks it is
// valid JSON. An empty value is "{}" when emptyOK.
func readJSON(flag, value string, stdin io.Reader) (json.RawMessage, error) {
	b, err := readSource(flag, value, stdin)
	if err != nil {
		return nil, err
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return nil, usageErrorf("%s is empty: give a JSON value, @file or - for stdin", flag)
	}
	if err := checkJSON(b); err != nil {
		return nil, usageErrorf("%s is not valid JSON: %v", flag, err)
	}
	return json.RawMessage(b), nil
}

// checkJSON validates b and says where it goes wrong.
func checkJSON(b []byte) error {
	var v any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		if se := (*json.SyntaxError)(nil); errors.As(err, &se) {
			return fmt.Errorf("%w (at byte %d)", se, se.Offset)
		}
		return err
	}
	if dec.More() {
		return fmt.Errorf("unexpected data after the JSON value (at byte %d)", dec.InputOffset())
	}
	return nil
}

// readObject is readJSON for values that must be JSON objects (input and
// metadata of a run).
func readObject(flag, value string, stdin io.Reader) (json.RawMessage, error) {
	b, err := readJSON(flag, value, stdin)
	if err != nil {
		return nil, err
	}
	if b[0] != '{' {
		return nil, usageErrorf("%s must be a JSON object, got %s", flag, admission.JSONKind(b[0]))
	}
	return b, nil
}

// metadata builds additional_metadata from --meta-json (an object) and the
// repeated --meta k=v pairs, which set string values and win over the
// object's keys. With neither it returns "{}".
func metadata(pairs []string, metaJSON string, stdin io.Reader) (json.RawMessage, error) {
	m := map[string]any{}
	if metaJSON != "" {
		b, err := readObject("--meta-json", metaJSON, stdin)
		if err != nil {
			return nil, err
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		if err := dec.Decode(&m); err != nil {
			return nil, usageErrorf("--meta-json: %v", err)
		}
	}
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok {
			return nil, usageErrorf("--meta %q: want key=value", p)
		}
		if k == "" {
			return nil, usageErrorf("--meta %q: empty key", p)
		}
		m[k] = v
	}
	// encoding/json sorts map keys, so equal metadata gives equal bytes.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		return nil, usageErrorf("metadata: %v", err)
	}
	return bytes.TrimSpace(buf.Bytes()), nil
}

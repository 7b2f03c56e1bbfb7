package taskqtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/taskq/taskq/pkg/client"
)

// Match narrows the runs an assertion looks at: only runs that every Match
// given accepts count. Make one with WithInput, Where, WithKey or
// WithStatus.
type Match interface {
	// String describes the match in failure messages.
	String() string
	// inputType is the input type the match is written for, or nil.
	inputType() reflect.Type
	// matches reports whether the run, whose decoded input is input (a
	// value of the task's input type), is accepted.
	matches(info *client.RunInfo, input any) bool
}

// WithInput accepts the runs whose input equals want, compared as JSON:
// the run's input, decoded as the task's input type and encoded again,
// against want encoded, the way the task's handler and its idempotency
// expression see it. I must be the task's input type.
func WithInput[I any](want I) Match {
	raw, err := json.Marshal(want)
	return &inputMatch[I]{want: raw, err: err}
}

type inputMatch[I any] struct {
	want []byte
	err  error
}

func (m *inputMatch[I]) String() string {
	if m.err != nil {
		return fmt.Sprintf("input (not encodable: %v)", m.err)
	}
	return "input " + string(m.want)
}

func (m *inputMatch[I]) inputType() reflect.Type { return reflect.TypeFor[I]() }

func (m *inputMatch[I]) matches(_ *client.RunInfo, input any) bool {
	if m.err != nil {
		return false
	}
	got, err := json.Marshal(input)
	return err == nil && bytes.Equal(got, m.want)
}

// Where accepts the runs whose decoded input fn accepts. I must be the
// task's input type.
func Where[I any](fn func(input I) bool) Match { return &whereMatch[I]{fn: fn} }

type whereMatch[I any] struct{ fn func(I) bool }

func (m *whereMatch[I]) String() string {
	return fmt.Sprintf("Where(func(%s) bool)", reflect.TypeFor[I]())
}

func (m *whereMatch[I]) inputType() reflect.Type { return reflect.TypeFor[I]() }

func (m *whereMatch[I]) matches(_ *client.RunInfo, input any) bool { return m.fn(input.(I)) }

// WithKey accepts the runs that claimed the idempotency key key (as the
// task's expression derived it).
func WithKey(key string) Match { return keyMatch(key) }

type keyMatch string

func (m keyMatch) String() string                           { return fmt.Sprintf("key %q", string(m)) }
func (m keyMatch) inputType() reflect.Type                  { return nil }
func (m keyMatch) matches(info *client.RunInfo, _ any) bool { return info.IdempotencyKey == string(m) }

// WithStatus accepts the runs whose status is s when they are read. A run
// waiting for a retry is client.StatusQueued.
func WithStatus(s client.Status) Match { return statusMatch(s) }

type statusMatch client.Status

func (m statusMatch) String() string          { return "status " + string(m) }
func (m statusMatch) inputType() reflect.Type { return nil }
func (m statusMatch) matches(info *client.RunInfo, _ any) bool {
	return info.Status == client.Status(m)
}

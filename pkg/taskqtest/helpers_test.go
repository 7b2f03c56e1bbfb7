package taskqtest_test

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/taskq/taskq/pkg/task"
)

// The tasks the kit's tests trigger.

type signup struct {
	Email string `json:"email"`
	Plan  string `json:"plan,omitempty"`
}

type welcome struct {
	Email string `json:"email"`
	Sent  bool   `json:"sent"`
}

// sendWelcome sends one welcome mail per address an hour.
var sendWelcome = task.Must[signup, welcome]("send-welcome", task.Options{
	Idempotency: task.TTL(`"welcome:" + input.email`, time.Hour),
})

type invoice struct {
	ID string `json:"id"`
}

// chargeInvoice is retried once, a minute after a failure.
var chargeInvoice = task.Must[invoice, string]("charge-invoice", task.Options{
	Idempotency: task.Status(`"invoice:" + input.id`, time.Hour),
	Retries:     1,
	Backoff:     task.Backoff{Initial: time.Minute, Factor: 1},
})

// fakeTB stands in for a test to see what an assertion reports: Fatalf
// (and the other ways to fail) record the message and end the goroutine,
// as the testing package does. Any other method goes to the real test.
type fakeTB struct {
	testing.TB
	mu     sync.Mutex
	msgs   []string
	failed bool
}

func (f *fakeTB) Helper() {}

func (f *fakeTB) record(msg string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.msgs = append(f.msgs, msg)
	f.failed = true
}

func (f *fakeTB) Errorf(format string, args ...any) { f.record(fmt.Sprintf(format, args...)) }
func (f *fakeTB) Error(args ...any)                 { f.record(fmt.Sprint(args...)) }
func (f *fakeTB) Fail()                             { f.record("Fail") }
func (f *fakeTB) FailNow()                          { f.record("FailNow"); runtime.Goexit() }
func (f *fakeTB) Fatal(args ...any)                 { f.record(fmt.Sprint(args...)); runtime.Goexit() }
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.record(fmt.Sprintf(format, args...))
	runtime.Goexit()
}

// failure runs fn with a fakeTB and returns what it failed with; t fails
// if fn did not fail.
func failure(t *testing.T, fn func(tb testing.TB)) string {
	t.Helper()
	f := &fakeTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(f)
	}()
	<-done
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.failed {
		t.Fatal("the assertion passed; want it to fail")
	}
	return strings.Join(f.msgs, "\n")
}

// wantAll fails t unless msg contains every part.
func wantAll(t *testing.T, msg string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(msg, p) {
			t.Errorf("failure message lacks %q; it is:\n%s", p, msg)
		}
	}
}

// exampleT stands in for a test in the package's Examples, which have no
// *testing.T: it runs cleanups when finished and panics on failure.
type exampleT struct {
	testing.TB
	cleanups []func()
}

func newExampleT() *exampleT { return &exampleT{} }

func (e *exampleT) Helper()                           {}
func (e *exampleT) Cleanup(fn func())                 { e.cleanups = append(e.cleanups, fn) }
func (e *exampleT) Fatal(args ...any)                 { panic(fmt.Sprint(args...)) }
func (e *exampleT) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }
func (e *exampleT) Errorf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }

func (e *exampleT) finish() {
	for i := len(e.cleanups) - 1; i >= 0; i-- {
		e.cleanups[i]()
	}
}

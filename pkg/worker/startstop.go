package worker

import (
	"context"
	"errors"
	"sync"
)

// component is the start/stop shape every duty of a Worker shares (after
// River's startstop.Service): Start returns once the duty is ready, or
// with the error that kept it from becoming ready; Stop ends it and
// returns once it has ended. Stop is safe to call twice, concurrently, or
// before Start (then a later Start fails with errStopped).
type component interface {
	Start(ctx context.Context) error
	Stop()
}

var (
	errStarted = errors.New("worker: already started")
	errStopped = errors.New("worker: stopped before it started")
)

// startStop is the state every component embeds: whether it started or
// stopped, and the goroutine it runs, if any. Its Stop is the component's
// unless the component has more to do on stopping (see processor.Stop).
type startStop struct {
	mu      sync.Mutex
	started bool
	stopped bool
	quit    chan struct{}
	done    chan struct{}
}

// canStart reports errStarted or errStopped when Start must not go on; a
// component with set-up to do (a subscription, a registration) checks it
// first so that it does none after Stop.
func (s *startStop) canStart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.stopped:
		return errStopped
	case s.started:
		return errStarted
	}
	return nil
}

// begin marks the component started and runs loop, if not nil, on a
// goroutine of its own; loop must return once quit is closed. It fails,
// running nothing, when the component was started or stopped before.
func (s *startStop) begin(loop func(quit <-chan struct{})) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.stopped:
		return errStopped
	case s.started:
		return errStarted
	}
	s.started = true
	s.quit = make(chan struct{})
	s.done = make(chan struct{})
	if loop == nil {
		close(s.done)
		return nil
	}
	go func() {
		defer close(s.done)
		loop(s.quit)
	}()
	return nil
}

// Stop closes quit and waits until the loop has returned. Every call waits
// so: a second Stop made while the first is waiting returns no sooner.
func (s *startStop) Stop() {
	s.mu.Lock()
	first := !s.stopped
	s.stopped = true
	if !s.started {
		s.mu.Unlock()
		return
	}
	if first {
		close(s.quit)
	}
	done := s.done
	s.mu.Unlock()
	<-done
}

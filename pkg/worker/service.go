package worker

import "sync"

// service is the start/stop shape shared by every background duty of a
// worker. stop is safe to call twice or before start.
type service struct {
	mu      sync.Mutex
	started bool
	stopped bool
	quit    chan struct{}
	done    chan struct{}
}

// start runs fn in a goroutine; fn must return once quit is closed. It
// reports false, and runs nothing, when the service was started or
// stopped before.
func (s *service) start(fn func(quit <-chan struct{})) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started || s.stopped {
		return false
	}
	s.started = true
	s.quit = make(chan struct{})
	s.done = make(chan struct{})
	go func() {
		defer close(s.done)
		fn(s.quit)
	}()
	return true
}

// stop signals fn to return and waits until it has.
func (s *service) stop() {
	s.mu.Lock()
	if !s.started || s.stopped {
		s.stopped = true
		s.mu.Unlock()
		return
	}
	s.stopped = true
	close(s.quit)
	done := s.done
	s.mu.Unlock()
	<-done
}

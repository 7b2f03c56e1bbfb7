package worker

// slots holds one token per free handler slot: Concurrency in all. The
// fetcher and the recoverer take slots before they read or claim
// deliveries, one per delivery; the processor gives a delivery's slot back
// once its handler has returned and a recording token is free (see
// processor.recording), or once it turns out not to start. So no more
// than Concurrency handlers run, and no delivery waits for a handler.
type slots chan struct{}

func newSlots(n int) slots {
	s := make(slots, n)
	s.release(n)
	return s
}

// take waits for one free slot, then takes every other free one, and
// reports how many it took; 0 when quit closed first.
func (s slots) take(quit <-chan struct{}) int {
	select {
	case <-quit:
		return 0
	case <-s:
	}
	n := 1
	for n < cap(s) {
		select {
		case <-s:
			n++
		default:
			return n
		}
	}
	return n
}

// takeUpTo waits for one free slot, then takes other free ones up to most
// in all, and reports how many it took; 0 when quit closed first. Waiters
// are served in the order they came (a channel's receivers are), so the
// readers of several partitions waiting for slots get them in turn.
func (s slots) takeUpTo(quit <-chan struct{}, most int) int {
	if most <= 0 {
		return 0
	}
	select {
	case <-quit:
		return 0
	case <-s:
	}
	n := 1
	for n < most {
		select {
		case <-s:
			n++
		default:
			return n
		}
	}
	return n
}

// takeFree takes every free slot without waiting and reports how many.
func (s slots) takeFree() int {
	n := 0
	for n < cap(s) {
		select {
		case <-s:
			n++
		default:
			return n
		}
	}
	return n
}

// takeOne waits for one free slot; it reports false when quit closed first.
func (s slots) takeOne(quit <-chan struct{}) bool {
	select {
	case <-quit:
		return false
	case <-s:
		return true
	}
}

// release gives n slots back.
func (s slots) release(n int) {
	for i := 0; i < n; i++ {
		s <- struct{}{}
	}
}

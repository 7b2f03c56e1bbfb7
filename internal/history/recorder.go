package history

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"
)

// line is one record of a history file: an operation's call (with the
// operation) or its return (with the result).
type line struct {
	Phase   string  `json:"ph"` // "call" or "ret"
	Process string  `json:"p"`
	ID      int64   `json:"id"`
	Time    int64   `json:"t"`
	Op      *Op     `json:"op,omitempty"`
	Result  *Result `json:"res,omitempty"`
}

// Recorder writes the operations of one process to a writer, one JSON line
// per call and per return. Each line is written with a single Write, before
// the caller acts on the result, so a process killed with SIGKILL loses at
// most the returns of the operations it had in flight. It is safe for
// concurrent use.
type Recorder struct {
	process string

	mu  sync.Mutex
	w   io.Writer
	seq int64
	err error
}

// NewRecorder returns a recorder for the named process writing to w.
func NewRecorder(process string, w io.Writer) *Recorder {
	return &Recorder{process: process, w: w}
}

// Process is the name the recorder stamps on its operations.
func (r *Recorder) Process() string { return r.process }

// Err returns the first write error, if any.
func (r *Recorder) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

func (r *Recorder) write(l *line) {
	b, err := json.Marshal(l)
	if err != nil {
		r.err = errors.Join(r.err, err)
		return
	}
	b = append(b, '\n')
	if _, err := r.w.Write(b); err != nil && r.err == nil {
		r.err = err
	}
}

// Pending is an operation that has been called and not yet returned.
type Pending struct {
	r  *Recorder
	id int64
	op Op
}

// Call records that op is being called now and returns the handle to
// record its return with.
func (r *Recorder) Call(op Op) *Pending {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seq++
	op.Process, op.ID, op.Call = r.process, r.seq, time.Now().UnixNano()
	r.write(&line{Phase: "call", Process: r.process, ID: op.ID, Time: op.Call, Op: &op})
	return &Pending{r: r, id: op.ID, op: op}
}

// Op is the operation as called.
func (p *Pending) Op() Op { return p.op }

// Return records that the operation returned res now.
func (p *Pending) Return(res Result) {
	p.r.mu.Lock()
	defer p.r.mu.Unlock()
	p.r.write(&line{Phase: "ret", Process: p.r.process, ID: p.id, Time: time.Now().UnixNano(), Result: &res})
}

// Read parses a history written by one or more Recorders. Calls without a
// return become operations whose Return is 0 and whose result is unknown.
// A truncated last line (a process killed mid-write) is ignored.
func Read(rd io.Reader) ([]Op, error) {
	type pk struct {
		p  string
		id int64
	}
	ops := map[pk]*Op{}
	var order []pk
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	n := 0
	for sc.Scan() {
		n++
		var l line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			continue // a line cut short by a kill
		}
		k := pk{l.Process, l.ID}
		switch l.Phase {
		case "call":
			if l.Op == nil {
				return nil, fmt.Errorf("history: line %d: call without an operation", n)
			}
			op := *l.Op
			op.Result = Result{Code: CodeUnknown, Err: "never returned"}
			ops[k] = &op
			order = append(order, k)
		case "ret":
			op := ops[k]
			if op == nil || l.Result == nil {
				return nil, fmt.Errorf("history: line %d: return of %s#%d without its call", n, l.Process, l.ID)
			}
			op.Return, op.Result = l.Time, *l.Result
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	out := make([]Op, 0, len(order))
	for _, k := range order {
		out = append(out, *ops[k])
	}
	return out, nil
}

// ReadFiles reads and merges the history files at paths, ordered by call
// time.
func ReadFiles(paths ...string) ([]Op, error) {
	var all []Op
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		ops, err := Read(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		all = append(all, ops...)
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].Call < all[j].Call })
	return all, nil
}

// ReadDir reads every *.jsonl file in dir with ReadFiles.
func ReadDir(dir string) ([]Op, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		return nil, err
	}
	return ReadFiles(paths...)
}

// Create opens dir/process.jsonl for a new Recorder of that process. The
// caller closes the file when the process is done.
func Create(dir, process string) (*Recorder, *os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, process+".jsonl"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, err
	}
	return NewRecorder(process, f), f, nil
}

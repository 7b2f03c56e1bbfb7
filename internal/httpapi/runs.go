package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/taskq/taskq/internal/admission"
	"github.com/taskq/taskq/internal/clientlink"
	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/wire"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
)

// runRequest is one trigger: the run's input and additional metadata,
// both JSON objects (absent means {}).
type runRequest struct {
	Input              json.RawMessage `json:"input"`
	AdditionalMetadata json.RawMessage `json:"additionalMetadata"`
}

// triggerRequest is the body of POST /api/v1/tasks/{task}/runs: one
// trigger, or a batch under "runs" (decoded item by item, see
// decodeBatch).
type triggerRequest struct {
	Input              json.RawMessage `json:"input"`
	AdditionalMetadata json.RawMessage `json:"additionalMetadata"`
	// OnConflict overrides the task's conflict policy: reject, attach,
	// supersede or signal.
	OnConflict string            `json:"onConflict"`
	Runs       []json.RawMessage `json:"runs"`
	// Priority, when set, is the run's priority (every run of a batch),
	// 1 to 3, in place of the task's.
	Priority *int `json:"priority"`
	// Durability asks the trigger (every run of a batch) to wait until
	// replicas hold it, in place of the task's level.
	Durability *durabilityRequest `json:"durability"`
	// RunAt or RunIn schedule the run (every run of a batch) for later.
	scheduleRequest
}

// durabilityRequest is the acknowledgement a trigger asks for.
type durabilityRequest struct {
	Replicas   int   `json:"replicas"`
	TimeoutMs  int64 `json:"timeoutMs"`
	LocalFsync bool  `json:"localFsync"`
}

// option checks the level against the limits and the client's operation
// timeout, naming the field at fault.
func (d *durabilityRequest) option(opTimeout time.Duration) (client.RunOption, *apiError) {
	td := task.Durability{Replicas: d.Replicas, Timeout: time.Duration(d.TimeoutMs) * time.Millisecond, LocalFsync: d.LocalFsync}
	bad := func(field, format string, args ...any) *apiError {
		e := newError(http.StatusBadRequest, CodeInvalidField, "field \"durability.%s\" "+format, append([]any{field}, args...)...)
		e.Field = "durability." + field
		return e
	}
	switch {
	case td.Replicas < 0 || td.Replicas > task.DurabilityReplicasMax:
		return nil, bad("replicas", "is %d; use 0 to %d", td.Replicas, task.DurabilityReplicasMax)
	case d.TimeoutMs < 0 || td.Timeout > task.DurabilityTimeoutMax:
		return nil, bad("timeoutMs", "is %d; use 0 (the default, %d) to %d", d.TimeoutMs,
			task.DurabilityTimeoutDefault.Milliseconds(), task.DurabilityTimeoutMax.Milliseconds())
	case engine.Durable(td) && engine.WithDefaults(td).Timeout >= opTimeout:
		return nil, bad("timeoutMs", "is %d; it must be below the server's operation timeout, %d", engine.WithDefaults(td).Timeout.Milliseconds(),
			opTimeout.Milliseconds())
	}
	return client.WithDurability(td), nil
}

func (s *Server) triggerRuns(w http.ResponseWriter, r *http.Request) {
	var req triggerRequest
	if e := s.decodeBody(w, r, &req); e != nil {
		writeError(w, e)
		return
	}
	if req.Runs != nil && (len(req.Input) > 0 || len(req.AdditionalMetadata) > 0) {
		writeError(w, newError(http.StatusBadRequest, CodeInvalidField,
			`send either "input" and "additionalMetadata" (one run) or "runs" (a batch), not both`))
		return
	}
	var opts []client.RunOption
	if req.OnConflict != "" {
		p := task.ConflictPolicy(req.OnConflict)
		if !engine.ValidPolicy(p) {
			e := newError(http.StatusBadRequest, CodeInvalidField,
				"field \"onConflict\" is %s; use reject, attach, supersede or signal", quote(req.OnConflict))
			e.Field = "onConflict"
			writeError(w, e)
			return
		}
		opts = append(opts, client.OnConflict(p))
	}
	if p := req.Priority; p != nil {
		if *p < 1 || *p > 3 {
			e := newError(http.StatusBadRequest, CodeInvalidField, "field \"priority\" is %d; use 1 (the lowest), 2 or 3", *p)
			e.Field = "priority"
			writeError(w, e)
			return
		}
		opts = append(opts, client.WithPriority(*p))
	}
	if req.Durability != nil {
		o, e := req.Durability.option(clientlink.Of(s.c).OperationTimeout)
		if e != nil {
			writeError(w, e)
			return
		}
		opts = append(opts, o)
	}
	if req.given() {
		o, e := req.options()
		if e != nil {
			writeError(w, e)
			return
		}
		opts = append(opts, o...)
	}
	if req.Runs != nil {
		s.triggerBatch(w, r, req.Runs, opts)
		return
	}
	input, e := objectField(req.Input, "", -1, "input")
	if e == nil {
		req.AdditionalMetadata, e = objectField(req.AdditionalMetadata, "", -1, "additionalMetadata")
	}
	if e != nil {
		writeError(w, e)
		return
	}
	def, e := s.definition(r.Context(), r.PathValue("task"))
	if e != nil {
		writeError(w, e)
		return
	}
	start := time.Now()
	h, err := s.c.TriggerJSON(r.Context(), def, input,
		append(opts, client.WithMetadata(req.AdditionalMetadata), client.WithSource(client.SourceHTTP))...)
	s.metrics.observeTrigger(sourceHTTP, start)
	var notDurable *client.DurabilityError
	if errors.As(err, &notDurable) {
		// The trigger took effect (the error carries its run): count it
		// as it was, and say that replicas may not hold it.
		if notDurable.Collision == nil {
			s.triggered(def.Name, notDurable.Run)
		} else {
			s.metrics.collisions.WithLabelValues(def.Name, sourceHTTP).Inc()
		}
		writeError(w, &apiError{status: http.StatusGatewayTimeout, errorBody: wire.NotDurable(notDurable)})
		return
	}
	if err != nil {
		var coll *client.IdempotencyCollisionError
		if errors.As(err, &coll) {
			s.metrics.collisions.WithLabelValues(def.Name, sourceHTTP).Inc()
			// The owner's status, as the command line shows it; left out
			// when it cannot be read.
			writeError(w, collisionError(coll, s.ownerStatus(r.Context(), coll)))
			return
		}
		writeError(w, triggerError(err))
		return
	}
	res := s.triggered(def.Name, h)
	status := res.Status
	res.Status = 0 // the answer's own status says it
	writeJSON(w, status, res)
}

// ownerStatus is the status of the run holding a collision's key, or ""
// when it cannot be read.
func (s *Server) ownerStatus(ctx context.Context, coll *client.IdempotencyCollisionError) client.Status {
	if coll.Owner == nil {
		return ""
	}
	info, err := coll.Owner.Get(ctx)
	if err != nil {
		return ""
	}
	return info.Status
}

// triggered describes a trigger that did not fail: 201 when it created the
// run, 200 when the key's owner was returned instead (attach, signal,
// debounce).
func (s *Server) triggered(taskName string, h *client.RunHandle) wire.TriggerResult {
	res := wire.Triggered(taskName, h)
	res.Status = http.StatusCreated
	if h.TriggerInfo().Outcome == client.OutcomeCreated || h.TriggerInfo().Outcome == "" {
		s.metrics.triggersAccepted.WithLabelValues(taskName, sourceHTTP).Inc()
	} else {
		res.Status = http.StatusOK
		s.metrics.collisions.WithLabelValues(taskName, sourceHTTP).Inc()
	}
	return res
}

// triggerBatch triggers many runs in one round trip. Every item is checked
// first; an invalid one fails the batch before anything is written.
func (s *Server) triggerBatch(w http.ResponseWriter, r *http.Request, items []json.RawMessage, opts []client.RunOption) {
	runs, e := decodeBatch[runRequest]("runs", "run", items, s.opts.MaxBatch)
	if e != nil {
		writeError(w, e)
		return
	}
	triggers := make([]client.Trigger, len(runs))
	for i, run := range runs {
		in, e := objectField(run.Input, "runs", i, "input")
		if e != nil {
			writeError(w, e)
			return
		}
		meta, e := objectField(run.AdditionalMetadata, "runs", i, "additionalMetadata")
		if e != nil {
			writeError(w, e)
			return
		}
		triggers[i] = client.Trigger{Input: in, Metadata: meta}
	}
	def, e := s.definition(r.Context(), r.PathValue("task"))
	if e != nil {
		writeError(w, e)
		return
	}
	start := time.Now()
	hs, err := s.c.TriggerManyJSON(r.Context(), def, triggers, append(opts, client.WithSource(client.SourceHTTP))...)
	s.metrics.observeTrigger(sourceHTTP, start)
	if hs == nil && err != nil {
		// Nothing was written: the batch as a whole, or one item, is invalid.
		var item *client.BatchItemError
		if se, ok := admission.ScheduleField(err); ok {
			writeError(w, runAtError(se)) // the batch's, not one run's
			return
		}
		if errors.As(err, &item) {
			ae := triggerError(item.Err).at(item.Index)
			ae.Message = "runs[" + strconv.Itoa(item.Index) + "]: " + ae.Message
			writeError(w, ae)
			return
		}
		writeError(w, triggerError(err))
		return
	}
	out := make([]wire.TriggerResult, len(hs))
	created := 0
	for i, h := range hs {
		if h != nil {
			out[i] = s.triggered(def.Name, h)
			created++
		}
	}
	var bulk *client.BulkCollisionError
	if first := firstItemError(err); created == 0 && !errors.As(err, &bulk) && first != nil {
		// Nothing was written and nothing collided (Redis went down after
		// the definition was read): say so as a whole, not with a 200
		// that lists only failures.
		writeError(w, triggerError(first.Err))
		return
	}
	if errors.As(err, &bulk) {
		for j, c := range bulk.Collisions {
			ae := collisionError(c, "")
			out[bulk.Indexes[j]] = wire.TriggerResult{Status: ae.status, Task: def.Name, Error: ae.Code, Message: ae.Message,
				IdempotencyKey: ae.IdempotencyKey, ExistingRunID: ae.ExistingRunID,
				Durability: wire.AcknowledgementOf(c.Owner)}
			s.metrics.collisions.WithLabelValues(def.Name, sourceHTTP).Inc()
		}
	}
	var notDurable *client.DurabilityError
	if errors.As(err, &notDurable) {
		// These triggers took effect, but replicas may not hold them: each
		// says so with the status a single trigger would have had.
		for _, i := range notDurable.Indexes {
			if i < len(out) && out[i].Error == "" {
				out[i].Status, out[i].Error = http.StatusGatewayTimeout, wire.CodeDurabilityNotReached
				out[i].Message = "the run was written on the master, but replicas may not hold it: it will run unless a failover loses it; " +
					"retrying with the same idempotency key is safe (it returns the same run)"
			}
		}
	}
	for _, e := range unwrapJoined(err) {
		var item *client.BatchItemError
		if errors.As(e, &item) && item.Index < len(out) {
			ae := triggerError(item.Err)
			out[item.Index] = wire.TriggerResult{Status: ae.status, Task: def.Name, Error: ae.Code, Message: ae.Message}
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"runs": out})
}

// firstItemError is the first per-item error of a batch's joined errors.
func firstItemError(err error) *client.BatchItemError {
	for _, e := range unwrapJoined(err) {
		var item *client.BatchItemError
		if errors.As(e, &item) {
			return item
		}
	}
	return nil
}

func unwrapJoined(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	if err != nil {
		return []error{err}
	}
	return nil
}

// definition returns the registered definition of a task.
func (s *Server) definition(ctx context.Context, name string) (*task.Definition, *apiError) {
	def, err := s.c.Definition(ctx, name)
	var cfg *task.ConfigError
	switch {
	case errors.Is(err, client.ErrTaskNotFound):
		return nil, newError(http.StatusNotFound, CodeTaskNotFound,
			"task %s is not registered in namespace %q: start a worker that handles it", quote(name), clientlink.Of(s.c).Namespace)
	case errors.As(err, &cfg):
		return nil, newError(http.StatusInternalServerError, CodeTaskDefinitionError,
			"the registered definition of task %s cannot be built: %v", quote(name), err)
	case err != nil:
		return nil, storeError(err)
	}
	return def, nil
}

func (s *Server) getRun(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	// The Inspector's read: with scheduledAt for a run that waits.
	info, err := s.c.Inspector().GetRun(r.Context(), id)
	if err != nil {
		writeError(w, runError(id, err))
		return
	}
	writeJSON(w, http.StatusOK, info)
}

func runError(id string, err error) *apiError {
	if errors.Is(err, client.ErrRunNotFound) {
		return newError(http.StatusNotFound, CodeRunNotFound, "run %s does not exist or its record has expired", quote(id))
	}
	return storeError(err)
}

// getResult answers with the run's result: 200 once it has ended, 202
// while it has not. ?wait= long-polls up to that long (at most MaxWait)
// for the end, woken by the run's completion notice.
func (s *Server) getResult(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	wait, e := s.parseWait(r.URL.Query().Get("wait"))
	if e != nil {
		writeError(w, e)
		return
	}
	h := s.c.Handle(id)
	var info *client.RunInfo
	var err error
	if wait > 0 {
		// The answer comes after the wait: the connection's write
		// deadline (WriteTimeout from the end of the headers) is moved
		// past it. A writer without deadlines (a test recorder) has
		// nothing to move.
		_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(wait + s.opts.WriteTimeout))
		ctx, cancel := context.WithTimeout(r.Context(), wait)
		deadline, _ := ctx.Deadline()
		info, err = h.Wait(ctx)
		// The socket's deadline can pass before ctx's timer marks it done.
		ended := ctx.Err() != nil || !time.Now().Before(deadline)
		cancel()
		if err != nil && ended {
			// Out of wait (or the server is stopping): answer with the
			// current state, whatever the request's context says. How the
			// wait ended is not looked at: go-redis reports a deadline
			// that passes mid-command as a network timeout, which is no
			// sign that Redis failed. The read below, with a time of its
			// own, is what says whether Redis answers.
			info, err = h.Get(context.WithoutCancel(r.Context()))
		}
	} else {
		info, err = h.Get(r.Context())
	}
	if err != nil {
		writeError(w, runError(id, err))
		return
	}
	status := http.StatusAccepted
	if info.Status.Terminal() {
		status = http.StatusOK
	}
	writeJSON(w, status, wire.OutcomeOf(info))
}

// parseWait reads ?wait=: a Go duration ("30s", "1m") or whole seconds.
func (s *Server) parseWait(v string) (time.Duration, *apiError) {
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		n, nerr := strconv.ParseInt(v, 10, 64)
		if nerr != nil && !errors.Is(nerr, strconv.ErrRange) {
			e := newError(http.StatusBadRequest, CodeInvalidParameter, "query parameter \"wait\" is %s; give a duration such as 30s or 500ms", quote(v))
			e.Field = "wait"
			return 0, e
		}
		// Clamp before converting: a large count of seconds (either sign)
		// overflows a Duration; -1 keeps the sign for the check below.
		d = time.Duration(max(min(n, int64(s.opts.MaxWait/time.Second)+1), -1)) * time.Second
	}
	if d < 0 {
		e := newError(http.StatusBadRequest, CodeInvalidParameter, "query parameter \"wait\" is %s; it must not be negative", quote(v))
		e.Field = "wait"
		return 0, e
	}
	return min(d, s.opts.MaxWait), nil
}

func (s *Server) cancelRun(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	before, err := s.c.Inspector().GetRun(r.Context(), id)
	if err != nil {
		writeError(w, runError(id, err))
		return
	}
	st := before.Status
	if !st.Terminal() {
		if st, err = s.c.Handle(id).Cancel(r.Context()); err != nil {
			writeError(w, runError(id, err))
			return
		}
	}
	writeJSON(w, http.StatusOK, wire.Cancellation{RunID: id, Status: st,
		Cancelled: !before.Status.Terminal() && st == client.StatusCancelled})
}

package httpapi

import (
	"errors"
	"net/http"
	"time"

	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
)

// keyResponse says who holds an idempotency key.
type keyResponse struct {
	Key string `json:"key"`
	// RunID is the owning run.
	RunID string `json:"runId"`
	// TTLMs is the time left in milliseconds (0: no expiry).
	TTLMs     int64      `json:"ttlMs"`
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
	// Task, Strategy and Status are the owner's; absent when the owner's
	// record has already expired.
	Task     string        `json:"task,omitempty"`
	Strategy string        `json:"strategy,omitempty"`
	Status   client.Status `json:"status,omitempty"`
}

func (s *Server) getKey(w http.ResponseWriter, r *http.Request) {
	key := r.PathValue("key")
	if key == "" {
		e := newError(http.StatusBadRequest, CodeInvalidParameter, "the key in the path is empty: GET /api/v1/keys/{key}")
		e.Field = "key"
		writeError(w, e)
		return
	}
	info, err := s.c.Inspector().GetKey(r.Context(), key)
	if errors.Is(err, client.ErrKeyNotHeld) {
		writeError(w, newError(http.StatusNotFound, CodeKeyNotFound, "idempotency key %s is not held by any run", quote(key)))
		return
	}
	if err != nil {
		writeError(w, storeError(err))
		return
	}
	res := keyResponse{Key: key, RunID: info.OwnerRunID, TTLMs: info.TTL.Milliseconds(),
		Task: info.Task, Strategy: info.Strategy, Status: info.OwnerStatus}
	if info.TTL > 0 {
		t := time.Now().Add(info.TTL).UTC().Truncate(time.Millisecond)
		res.ExpiresAt = &t
	}
	writeJSON(w, http.StatusOK, res)
}

func (s *Server) listTasks(w http.ResponseWriter, r *http.Request) {
	regs, err := s.c.Inspector().ListTasks(r.Context())
	if err != nil {
		writeError(w, storeError(err))
		return
	}
	if regs == nil {
		regs = []task.Registered{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"tasks": regs})
}

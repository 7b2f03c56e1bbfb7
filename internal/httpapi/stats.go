package httpapi

import (
	"net/http"
	"time"

	"github.com/taskq/taskq/pkg/client"
)

// statsWindows are the windows GET /api/v1/stats serves: an hour by the
// minute and a day by ten minutes.
var statsWindows = map[string]time.Duration{"1h": time.Hour, "24h": 24 * time.Hour}

// statsPoint is one step of a stats answer; durations in milliseconds.
type statsPoint struct {
	Time       time.Time `json:"time"`
	Started    int64     `json:"started"`
	Ended      int64     `json:"ended"`
	Succeeded  int64     `json:"succeeded"`
	Failed     int64     `json:"failed"`
	Retried    int64     `json:"retried"`
	Duplicates int64     `json:"duplicates"`
	WaitP50Ms  float64   `json:"waitP50Ms"`
	WaitP95Ms  float64   `json:"waitP95Ms"`
	WaitP99Ms  float64   `json:"waitP99Ms"`
	RunP50Ms   float64   `json:"runP50Ms"`
	RunP95Ms   float64   `json:"runP95Ms"`
	RunP99Ms   float64   `json:"runP99Ms"`
}

// statsBody is the answer of GET /api/v1/stats.
type statsBody struct {
	Task    string       `json:"task,omitempty"`
	Window  string       `json:"window"`
	StepSec int64        `json:"stepSeconds"`
	Points  []statsPoint `json:"points"`
	Total   statsPoint   `json:"total"`
}

func toStatsPoint(p client.RunStatsPoint) statsPoint {
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	return statsPoint{
		Time: p.Time.UTC(), Started: p.Started, Ended: p.Ended, Succeeded: p.Succeeded, Failed: p.Failed,
		Retried: p.Retried, Duplicates: p.Duplicates, WaitP50Ms: ms(p.WaitP50), WaitP95Ms: ms(p.WaitP95),
		WaitP99Ms: ms(p.WaitP99), RunP50Ms: ms(p.RunP50), RunP95Ms: ms(p.RunP95), RunP99Ms: ms(p.RunP99),
	}
}

// getStats answers GET /api/v1/stats?task=&window=1h|24h: throughput,
// failures, retries, duplicates and queue wait and run time percentiles,
// per step over the window, of one task or of all.
func (s *Server) getStats(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	win := q.Get("window")
	if win == "" {
		win = "1h"
	}
	d, ok := statsWindows[win]
	if !ok {
		e := newError(http.StatusBadRequest, CodeInvalidParameter, "query parameter \"window\" is %s; give 1h or 24h", quote(win))
		e.Field = "window"
		writeError(w, e)
		return
	}
	st, err := s.c.Inspector().RunStats(r.Context(), q.Get("task"), d)
	if err != nil {
		writeError(w, storeError(err))
		return
	}
	body := statsBody{Task: st.Task, Window: win, StepSec: int64(st.Step / time.Second), Points: make([]statsPoint, len(st.Points)),
		Total: toStatsPoint(st.Total)}
	for i, p := range st.Points {
		body.Points[i] = toStatsPoint(p)
	}
	writeJSON(w, http.StatusOK, body)
}

// listQueues answers GET /api/v1/queues?task=: each task's queue counts
// (queued, running, the age of the oldest queued run, and the runs held
// out of the streams: scheduled, rate limited, parked, retrying), of the
// registered tasks or of the tasks named.
func (s *Server) listQueues(w http.ResponseWriter, r *http.Request) {
	st, err := s.c.Inspector().QueueStats(r.Context(), r.URL.Query()["task"]...)
	if err != nil {
		writeError(w, storeError(err))
		return
	}
	if st == nil {
		st = []client.QueueStat{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"queues": st})
}

package webui

import (
	"net/http"

	"github.com/taskq/taskq/pkg/client"
)

// taskData is a task's page: its queue counts and run statistics.
type taskData struct {
	Task   string
	Queues []client.QueueStat
	Charts *statsCharts
}

// taskPage serves /ui/tasks/{name}: the task's queue counts and its run
// statistics over the last hour and day.
func (u *UI) taskPage(w http.ResponseWriter, r *http.Request, s *session) {
	name := r.PathValue("name")
	d := &taskData{Task: name}
	var err error
	if d.Queues, err = u.in.QueueStats(r.Context(), name); err != nil {
		u.failErr(w, r, s, "read the task's queue", err)
		return
	}
	if d.Charts, err = u.readCharts(r.Context(), name); err != nil {
		u.failErr(w, r, s, "read the task's statistics", err)
		return
	}
	u.render(w, r, s, http.StatusOK, "task", &view{Title: "Task " + name, Nav: "overview", Poll: pollURL(r), SlowPoll: true, Data: d})
}

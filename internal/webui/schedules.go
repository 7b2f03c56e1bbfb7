package webui

import (
	"net/http"
	"strconv"

	"github.com/taskq/taskq/internal/ticks"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
)

// scheduleRow is one schedule of the schedules page.
type scheduleRow struct {
	*client.ScheduleInfo
	Zone    string
	Misfire string
}

// schedules is the page of the namespace's cron schedules, with pause,
// resume and trigger now for a session that may act.
func (u *UI) schedules(w http.ResponseWriter, r *http.Request, s *session) {
	infos, err := u.opts.Client.Schedules().List(r.Context())
	if err != nil {
		u.failErr(w, r, s, "list the schedules", err)
		return
	}
	rows := make([]scheduleRow, len(infos))
	for i, info := range infos {
		row := scheduleRow{ScheduleInfo: info, Zone: info.Schedule.TimeZone}
		if row.Zone == "" {
			row.Zone = "UTC"
		}
		m := info.Schedule.Misfire
		if m.Policy == task.MisfireCatchUp {
			row.Misfire = "catch up " + strconv.Itoa(m.Max) + " within " + ticks.Horizon(info.Schedule).String()
		} else {
			row.Misfire = "skip after " + ticks.Horizon(info.Schedule).String()
		}
		rows[i] = row
	}
	u.render(w, r, s, http.StatusOK, "schedules", &view{Title: "Schedules", Nav: "schedules", Poll: pollURL(r), Flash: done(r), Data: rows})
}

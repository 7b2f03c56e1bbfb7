package webui

import (
	"net/http"
	"strings"
	"time"

	"github.com/taskq/taskq/pkg/client"
)

// rateLimitsData is the rate limits page: every limit the registered
// tasks declare, with its use now, of Key for the limits with a key.
type rateLimitsData struct {
	Key    string
	Limits []rateLimitRow
}

type rateLimitRow struct {
	client.RateLimitInfo
	Period string
	// Share is the use as a share of the limit, in percent (0 to 100),
	// for the bar.
	Share int
}

// rateLimits is the page of the namespace's rate limits.
func (u *UI) rateLimits(w http.ResponseWriter, r *http.Request, s *session) {
	d := &rateLimitsData{Key: strings.TrimSpace(r.URL.Query().Get("key"))}
	ls, err := u.in.ListRateLimits(r.Context(), d.Key)
	if err != nil {
		u.failErr(w, r, s, "read the rate limits", err)
		return
	}
	for _, l := range ls {
		row := rateLimitRow{RateLimitInfo: l, Period: span(time.Duration(l.PeriodMs) * time.Millisecond)}
		if l.Used != nil && l.Limit > 0 {
			row.Share = min(100, 100**l.Used/l.Limit)
		}
		d.Limits = append(d.Limits, row)
	}
	u.render(w, r, s, http.StatusOK, "ratelimits", &view{Title: "Rate limits", Nav: "ratelimits", Poll: pollURL(r), Data: d})
}

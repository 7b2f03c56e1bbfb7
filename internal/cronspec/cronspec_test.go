package cronspec

import (
	"errors"
	"testing"
	"time"
)

// Each failure names its field; @every ticks on multiples of its period
// since the epoch, in any zone.
func TestParse(t *testing.T) {
	for _, c := range []struct{ expr, zone, field string }{
		{"", "", "cron"},
		{"* * * *", "", "cron"},
		{"@every 1500ms", "", "cron"},
		{"* * * * *", "Mars/Olympus", "timezone"},
		{"CRON_TZ=Europe/Paris * * * * *", "UTC", "timezone"},
	} {
		_, err := Parse(c.expr, c.zone, false)
		var e *Error
		if !errors.As(err, &e) || e.Field != c.field {
			t.Errorf("Parse(%q, %q) = %v, want an *Error for %s", c.expr, c.zone, err, c.field)
		}
	}
	s, err := Parse("@every 90s", "Asia/Tokyo", false)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Unix(1000, 0)
	if got := s.Next(at); !got.Equal(time.Unix(1080, 0)) {
		t.Fatalf("Next(%v) = %v, want the next multiple of 90s", at, got)
	}
}

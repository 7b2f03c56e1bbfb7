package main

import (
	"encoding/json"
	"flag"
	"strings"
	"testing"
)

// -help shows the default from the environment without its password; the
// flag's value is still the whole URL.
func TestHelpHidesTheRedisPassword(t *testing.T) {
	for env, shown := range map[string]string{
		"redis://:s3cret@10.0.0.5:6379/0": "redis://:xxxxx@10.0.0.5:6379/0",
		"redis://:s3cret@[::1/0":          "not a valid URL",
	} {
		t.Setenv("TASKQ_REDIS_URL", env)
		fs := flag.NewFlagSet("worker", flag.ContinueOnError)
		url := redisFlag(fs)
		var help strings.Builder
		fs.SetOutput(&help)
		fs.PrintDefaults()
		if strings.Contains(help.String(), "s3cret") || !strings.Contains(help.String(), shown) {
			t.Errorf("TASKQ_REDIS_URL=%s: -help says\n%s", env, help.String())
		}
		if err := fs.Parse(nil); err != nil || *url != env {
			t.Errorf("-redis = %q, %v; want %q", *url, err, env)
		}
	}
}

// -log-format json logs one JSON object a line; an unknown format is an
// error naming the flag.
func TestLogFormat(t *testing.T) {
	var buf strings.Builder
	log, err := newLogger(&buf, "json")
	if err != nil {
		t.Fatal(err)
	}
	log.Warn("taskq: run failed", "run", "r1")
	var line map[string]any
	if err := json.Unmarshal([]byte(buf.String()), &line); err != nil || line["level"] != "WARN" || line["run"] != "r1" {
		t.Errorf("json log line %q: %v", buf.String(), err)
	}
	if _, err := newLogger(&buf, "xml"); err == nil || !strings.Contains(err.Error(), "-log-format") {
		t.Errorf("-log-format xml: %v", err)
	}
}

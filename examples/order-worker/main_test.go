package main

import (
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

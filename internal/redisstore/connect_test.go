package redisstore_test

import (
	"strings"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/redisstore"
)

// Options built from a URL heed each call's deadline and cap the dial,
// read and write timeouts at the operation timeout, keeping lower ones the
// URL sets.
func TestClientOptionsBoundEveryCall(t *testing.T) {
	ro, err := redisstore.ClientOptions("redis://127.0.0.1:6379/0?read_timeout=200ms&dial_timeout=30s", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !ro.ContextTimeoutEnabled {
		t.Error("ContextTimeoutEnabled is off: go-redis would ignore call deadlines on the socket")
	}
	if ro.DialTimeout != time.Second || ro.ReadTimeout != 200*time.Millisecond || ro.WriteTimeout != time.Second {
		t.Errorf("dial/read/write timeouts = %s/%s/%s, want 1s/200ms/1s", ro.DialTimeout, ro.ReadTimeout, ro.WriteTimeout)
	}
}

// A URL that does not parse is named without the URL, which may carry a
// password.
func TestClientOptionsErrorHidesTheURL(t *testing.T) {
	_, err := redisstore.ClientOptions("redis://user:s3cret@127.0.0.1:notaport/0", time.Second)
	if err == nil {
		t.Fatal("a URL with a bad port parsed")
	}
	if strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "redis URL") {
		t.Fatalf("error %q: want one naming the Redis URL without its password", err)
	}
}

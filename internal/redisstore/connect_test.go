package redisstore_test

import (
	"runtime"
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

// A cluster URL names its seeds in the host part; user, password, TLS and
// go-redis's options apply to every node, with the timeouts capped as on
// one node.
func TestClusterOptionsFromURL(t *testing.T) {
	co, err := redisstore.ClusterOptions("rediss+cluster://app:s3cret@10.0.0.1:7000,10.0.0.2:7001,[::1]:7002/?read_timeout=200ms&pool_size=7", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(co.Addrs, " "); got != "10.0.0.1:7000 10.0.0.2:7001 [::1]:7002" {
		t.Errorf("seeds %q", got)
	}
	if co.Username != "app" || co.Password != "s3cret" || co.TLSConfig == nil || co.PoolSize != 7 {
		t.Errorf("user %q, password set %v, TLS %v, pool %d", co.Username, co.Password != "", co.TLSConfig != nil, co.PoolSize)
	}
	if !co.ContextTimeoutEnabled || co.ReadTimeout != 200*time.Millisecond || co.DialTimeout != time.Second {
		t.Errorf("context timeouts %v, read %s, dial %s", co.ContextTimeoutEnabled, co.ReadTimeout, co.DialTimeout)
	}
	if !redisstore.IsClusterURL("redis+cluster://h:1") || redisstore.IsClusterURL("redis://h:1/0") {
		t.Error("IsClusterURL tells a cluster URL from a node's wrongly")
	}
}

// A cluster URL that cannot name a cluster is refused, saying why, and
// without the password.
func TestClusterOptionsRefusals(t *testing.T) {
	for url, want := range map[string]string{
		"redis+cluster://u:s3cret@h:7000/3":        "only database 0",
		"redis+cluster://u:s3cret@h:7000,,h:7001":  "seed address 2 of 3 is empty",
		"redis+cluster://u:s3cret@h:7000?addr=h:2": "not as addr=",
		"redis+cluster://u:s3cret@h:7000?nosuch=1": "nosuch",
		"redis://u:s3cret@h:7000":                  "scheme must be",
	} {
		_, err := redisstore.ClusterOptions(url, time.Second)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%s: %v, want an error saying %q without the password", url, err, want)
		}
	}
}

// A client made from a URL without pool_size has room above go-redis's
// default pool for a worker's blocking read per partition, PoolHeadroom
// of them; a URL's pool_size is kept.
func TestURLClientsHaveRoomForAReaderPerPartition(t *testing.T) {
	co, err := redisstore.ClusterOptions("redis+cluster://10.0.0.1:7000", 0)
	if err != nil || co.PoolSize != 5*runtime.GOMAXPROCS(0)+16 {
		t.Errorf("cluster pool %d, %v", co.PoolSize, err)
	}
	ro, err := redisstore.ClientOptions("redis://10.0.0.1:6379/0", 0)
	if err != nil || ro.PoolSize != 10*runtime.GOMAXPROCS(0)+16 {
		t.Errorf("pool %d, %v", ro.PoolSize, err)
	}
	if ro, err := redisstore.ClientOptions("redis://10.0.0.1:6379/0?pool_size=3", 0); err != nil || ro.PoolSize != 3 {
		t.Errorf("pool_size=3 gives a pool of %d, %v", ro.PoolSize, err)
	}
}

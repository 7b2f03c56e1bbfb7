package main

import (
	"math"
	"slices"
	"testing"
)

func TestParseStatsReadsCPUAndScriptCalls(t *testing.T) {
	info := "# CPU\r\nused_cpu_sys:1.500000\r\nused_cpu_user:2.250000\r\n" +
		"# Clients\r\nconnected_clients:7\r\n" +
		"# Commandstats\r\ncmdstat_evalsha:calls=30,usec=900,usec_per_call=30.00,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_fcall:calls=10,usec=100,usec_per_call=10.00,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_xreadgroup:calls=4,usec=40,usec_per_call=10.00,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_info:calls=2,usec=10,usec_per_call=5.00,rejected_calls=0,failed_calls=0\r\n"
	got := parseStats(info)
	want := nodeStats{cpu: 3.75, scripts: 40, scriptUsec: 1000, calls: 46, clients: 7, reads: 4}
	if got != want {
		t.Fatalf("parseStats = %+v, want %+v", got, want)
	}
}

func TestSharesDeviationFromEven(t *testing.T) {
	share, dev := shares([]float64{30, 40, 30})
	for i, w := range []float64{0.3, 0.4, 0.3} {
		if math.Abs(share[i]-w) > 1e-9 {
			t.Fatalf("share[%d] = %v, want %v", i, share[i], w)
		}
	}
	for i, w := range []float64{-0.1, 0.2, -0.1} {
		if math.Abs(dev[i]-w) > 1e-9 {
			t.Fatalf("dev[%d] = %v, want %v", i, dev[i], w)
		}
	}
}

func TestReplicaAddrs(t *testing.T) {
	info := "role:master\r\nconnected_slaves:2\r\n" +
		"slave0:ip=127.0.0.1,port=6380,state=online,offset=1,lag=0\r\n" +
		"slave1:ip=::1,port=6381,state=online,offset=1,lag=0\r\nmaster_repl_offset:1\r\n"
	if got, want := replicaAddrs(info), []string{"127.0.0.1:6380", "[::1]:6381"}; !slices.Equal(got, want) {
		t.Fatalf("replicaAddrs = %v, want %v", got, want)
	}
}

func TestMasterOfSlot(t *testing.T) {
	b := &backend{masters: 3, nodes: []*node{
		{master: true, slots: "0-5460"}, {master: true, slots: "5461-10922,[10923->-abc]"}, {master: true, slots: "10923-16383"}, {},
	}}
	for slot, want := range map[int]int{0: 0, 5460: 0, 5461: 1, 10922: 1, 10923: 2, 16383: 2, 16384: -1} {
		if got := b.masterOfSlot(slot); got != want {
			t.Errorf("masterOfSlot(%d) = %d, want %d", slot, got, want)
		}
	}
}

func TestClusterFlags(t *testing.T) {
	c, err := parseFlags([]string{"-cluster", "-cluster-partitions", "48"})
	if err != nil {
		t.Fatal(err)
	}
	if !c.cluster || c.clusterPartitions != 48 || c.redisSet || !c.perMaster {
		t.Fatalf("parsed %+v", c)
	}
	if c, _ = parseFlags([]string{"-cluster", "-redis", "redis+cluster://127.0.0.1:7000/"}); !c.redisSet {
		t.Fatal("-redis given, redisSet false")
	}
	if c, err := parseFlags([]string{"-cluster"}); err != nil || c.clusterPartitions != 0 {
		t.Fatalf("-cluster-partitions unset: %+v, %v; want 0, one per master", c, err)
	}
	for _, p := range []string{"-1", "1025"} {
		if _, err := parseFlags([]string{"-cluster-partitions", p}); err == nil {
			t.Fatalf("-cluster-partitions %s accepted", p)
		}
	}
}

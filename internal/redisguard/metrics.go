package redisguard

import (
	"github.com/prometheus/client_golang/prometheus"
)

var (
	descUnsafe = prometheus.NewDesc("taskq_redis_eviction_policy_unsafe",
		"1 while the last check found a Redis master whose maxmemory-policy may evict keys (or that does not tell its policy), accepted or not; 0 while every master has noeviction.",
		nil, nil)
	descAccepted = prometheus.NewDesc("taskq_redis_eviction_risk_accepted",
		"1 once AllowEvictingRedis (--allow-evicting-redis) accepted a Redis that may evict keys; it stays 1 for the life of the process.",
		nil, nil)
	descPolicy = prometheus.NewDesc("taskq_redis_maxmemory_policy",
		"The maxmemory-policy of each Redis master as last read (value 1); source is config, info or embedded.",
		[]string{"addr", "policy", "source"}, nil)
	descUsed = prometheus.NewDesc("taskq_redis_used_memory_bytes",
		"used_memory of each Redis master as last read.",
		[]string{"addr"}, nil)
	descMax = prometheus.NewDesc("taskq_redis_maxmemory_bytes",
		"maxmemory of each Redis master as last read; 0 means no limit.",
		[]string{"addr"}, nil)
	descChecked = prometheus.NewDesc("taskq_redis_memory_checked_timestamp_seconds",
		"When every Redis master last answered the check of its policy and memory (unix time).",
		nil, nil)
)

// Collector returns the Prometheus metrics of the guard, read from its
// status at each scrape. Each guard's collector can be registered once per
// registry.
func (g *Guard) Collector() prometheus.Collector { return collector{g} }

type collector struct{ g *Guard }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descUnsafe, descAccepted, descPolicy, descUsed, descMax, descChecked} {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	st := c.g.Status()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	b := func(ok bool) float64 {
		if ok {
			return 1
		}
		return 0
	}
	gauge(descAccepted, b(st.Accepted))
	if st.Checked.IsZero() {
		return // nothing known yet
	}
	gauge(descUnsafe, b(st.Unsafe != nil))
	gauge(descChecked, float64(st.Checked.UnixNano())/1e9)
	for _, n := range st.Nodes {
		gauge(descPolicy, 1, n.Addr, n.Policy, n.Source)
		if n.Source != SourceEmbedded { // which tells no memory figures
			gauge(descUsed, float64(n.UsedMemory), n.Addr)
			gauge(descMax, float64(n.MaxMemory), n.Addr)
		}
	}
}

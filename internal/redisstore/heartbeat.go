package redisstore

import "context"

// heartbeatScript extends leases: lua/heartbeat.lua.
var heartbeatScript = loadScript("heartbeat")

// Lease is a delivery a worker is running.
type Lease struct {
	EntryID string
	RunID   string
	Attempt int
}

// LeaseState is what a heartbeat learned of one lease.
type LeaseState int

// Lease states reported by Heartbeat.
const (
	LeaseLost     LeaseState = 0 // another consumer took the delivery
	LeaseHeld     LeaseState = 1 // extended
	LeaseFinished LeaseState = 2 // the run was cancelled or ended
	LeaseStale    LeaseState = 3 // a newer attempt owns the run
)

// LeaseReport is what a heartbeat learned of one lease.
type LeaseReport struct {
	State LeaseState
	// Reason is the run's error when State is LeaseFinished: why it was
	// cancelled ("superseded by run <id>", ...).
	Reason string
}

// Heartbeat extends the leases consumer holds on task's stream.
func (s *Store) Heartbeat(ctx context.Context, task, consumer string, leases []Lease) ([]LeaseReport, error) {
	k := [1 + heartbeatKeyCount]string{heartbeatKeyStream: s.keys.Stream(task)}
	h := [1 + heartbeatArgCount]any{
		heartbeatArgGroup:    GroupName,
		heartbeatArgConsumer: consumer,
		heartbeatArgPrefix:   s.keys.Prefix(),
	}
	args := append(make([]any, 0, heartbeatArgCount+heartbeatItemArgCount*len(leases)), h[1:]...)
	for _, l := range leases {
		a := [heartbeatItemArgCount]any{
			heartbeatItemArgEntry:   l.EntryID,
			heartbeatItemArgRunID:   l.RunID,
			heartbeatItemArgAttempt: l.Attempt,
		}
		args = append(args, a[:]...)
	}
	v, err := s.runScript(ctx, heartbeatScript, k[1:], args...)
	if err != nil {
		return nil, err
	}
	r, err := asSlice(v)
	if err != nil {
		return nil, err
	}
	out := make([]LeaseReport, len(r)/2)
	for i := range out {
		out[i] = LeaseReport{State: LeaseState(asInt(r[2*i])), Reason: asString(r[2*i+1])}
	}
	return out, nil
}

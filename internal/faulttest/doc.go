// Package faulttest runs taskq the way production does, as separate worker
// processes on a redis-server (or a Redis Cluster) of its own, and breaks
// it: SIGKILL and SIGSTOP of workers, restarts of Redis, the failover of a
// cluster master, replies lost on the wire. Its tests prove the guarantees
// in docs/guarantees.md; the soak program (cmd/taskq-soak) drives the same
// pieces for minutes.
//
// The pieces: Tasks (the task definitions and handler every process
// shares), RunWorker (the body of a worker process, which records its
// history with internal/history), RunIngester (the body of a process that
// pushes an event and kills itself at a chosen step of its fan-out), Proc
// (a child process whose stdout lines can be waited for and which can be
// killed, paused and resumed), Dial and AddHook (a process's Redis
// client, a cluster client for a redis+cluster:// URL, and where its
// history hook goes), and Proxy (a loopback TCP proxy that can drop the
// reply to a chosen command).
//
// A process becomes a worker when RoleEnv is set, an ingester when
// IngesterRoleEnv is: test binaries and the soak program call
// MaybeRunRole first thing in TestMain or main.
package faulttest

// Package httpapi is the HTTP API that `taskq serve` exposes, for webhook
// sources and services written in other languages. It is a thin layer over
// the Go client (pkg/client) and the event ingester (pkg/events): a trigger
// over HTTP claims the same namespace-wide idempotency keys, in the same
// Lua script, as a trigger from Go, so the two collide with each other.
//
// Routes (api/openapi.yaml documents them in full):
//
//	POST /api/v1/events                  push one event, or a batch: 202
//	GET  /api/v1/events/{id}             an event and what it did per task
//	POST /api/v1/tasks/{task}/runs       trigger one run (201, or 409 on a
//	                                     collision) or a batch ({"runs": [...]})
//	GET  /api/v1/tasks                   registered task definitions
//	GET  /api/v1/runs/{id}               a run's status, attempts, result
//	GET  /api/v1/runs/{id}/result        its result; ?wait=30s long-polls
//	POST /api/v1/runs/{id}/cancel        cancel a run
//	GET  /api/v1/keys/{key}              who holds an idempotency key
//	POST /api/v1/keys/{key}/signal       signal the run that holds it
//	POST /api/v1/webhooks/{source}       a signed webhook, mapped to an event
//	GET  /healthz, /readyz               liveness, and readiness (Redis answers)
//	GET  /metrics                        Prometheus metrics
//
// Every /api/ route and /metrics require "Authorization: Bearer <token>"
// of a named token (internal/auth) that holds the route's scope (trigger,
// read, operate; admin holds all): routeTable declares each route's, and
// api/openapi.yaml documents it as x-taskq-scope. A token without it gets
// 403 naming the scope; state-changing requests are audited by token name.
// Tokens are hashed and compared in constant time. /healthz and /readyz
// are open so that probes need no secret; POST /api/v1/webhooks/{source}
// takes its sender's signature instead (internal/webhook). New refuses to
// build a server without a token unless Options.Insecure is set. With
// Options.TLS, Serve answers HTTPS only; Reload reads the tokens, the
// webhook sources and the certificate again.
//
// Routes are matched on the escaped path, segment by segment, with no
// path cleaning: a key may contain slashes and dot segments, and no answer
// is a redirect.
//
// Bad input never reaches Redis: bodies must be JSON by Content-Type, are
// read within a size limit and a read deadline, must be valid UTF-8 (no
// escaped lone surrogates either), and are decoded strictly (unknown fields
// and wrong types are refused); every event or run of a batch is checked
// before anything is written. Every error, including unknown routes (404)
// and methods (405), is a JSON object {"error": "<stable code>", "message":
// "<what is wrong>"}, whose message quotes at most a short prefix of any
// value sent. storeError is the one place Redis failures become answers.
//
// Serve bounds what a client can hold: read, write, header and idle
// deadlines, a header size limit and a cap on open connections. Without a
// token (Options.Insecure) it serves only on a loopback address.
//
// api/openapi.yaml is the contract: the package's tests validate every
// answer they receive against it and fuzz every operation from it.
//
// Serve shuts down gracefully when its context ends: it stops accepting
// connections and lets in-flight requests, long-polls included, finish
// within Options.ShutdownTimeout. Requests are logged with log/slog.
package httpapi

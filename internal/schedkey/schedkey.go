// Package schedkey compiles the key expressions of cron schedules. Package
// idempotency compiles them in an environment of their own, which declares
// the variable schedule beside input and additional_metadata; that
// environment serves taskq's scheduler only, so it is reached through this
// package rather than idempotency's public API.
package schedkey

import "time"

// Func derives the key of one tick of a schedule from the schedule's JSON
// input and metadata, its name and the tick's nominal time, bound to
// schedule.name and schedule.time. Its errors are the *idempotency.Error
// values of Expression.KeyJSON.
type Func = func(input, meta []byte, name string, tick time.Time) (string, error)

// Compile compiles a schedule's key expression with a compiler of default
// limits shared by the process; its errors are *idempotency.Error values.
// Package idempotency sets it when it is initialised, which every importer
// of this package that also imports idempotency can rely on.
var Compile func(expr string) (Func, error)

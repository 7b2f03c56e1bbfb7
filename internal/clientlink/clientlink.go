// Package clientlink lets taskq's own packages reach the store behind a
// *client.Client without a public method on Client: package events pushes
// and reads events through it, and tests and fault tooling inspect Redis
// with it. Users cannot import it; what they may do with stored runs, keys,
// events and tasks is client.Inspector.
//
// Package client sets Store in its init, the way grpc-go's internal
// package links its public packages: client imports this package, so this
// package cannot name *client.Client and takes it as any.
package clientlink

import "github.com/taskq/taskq/internal/redisstore"

// storeOf is set once, by package client's init, and never changed.
var storeOf func(c any) *redisstore.Store

// SetStoreFunc installs the accessor; package client calls it in init.
func SetStoreFunc(f func(c any) *redisstore.Store) { storeOf = f }

// Store returns the store of c, a *client.Client. It panics for anything
// else.
func Store(c any) *redisstore.Store { return storeOf(c) }

// Package clientlink lets taskq's own packages reach the storage engine
// behind a *client.Client: package events pushes and reads events through
// it, and tests and fault tooling inspect the store with it. Users cannot
// import it, so they cannot make the Token that Client.Engine asks for;
// what they may do with stored runs, keys, events and tasks is
// client.Inspector.
package clientlink

import "github.com/taskq/taskq/internal/engine"

// Token is the argument of (*client.Client).Engine: a value of a type
// only taskq's own packages can name.
type Token struct{}

// engineHolder is *client.Client, named here without importing package
// client (which imports this package).
type engineHolder interface {
	Engine(Token) engine.Engine
}

// Store returns the engine of c, a *client.Client. It panics for
// anything else.
func Store(c any) engine.Engine { return c.(engineHolder).Engine(Token{}) }

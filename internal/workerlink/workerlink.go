// Package workerlink lets taskq's own packages reach what is behind a
// *worker.Worker without making it part of the worker's API: the names of
// the tasks it handles (taskqtest keeps Work from competing with the
// workers a test started). Package worker registers how to reach them
// when it is initialised, as this package cannot import it.
package workerlink

// tasksOf is set by package worker (Register).
var tasksOf func(w any) []string

// Register is called once, by package worker's init, with the function
// that returns the names of the tasks a *worker.Worker handles.
func Register(tasks func(w any) []string) { tasksOf = tasks }

// Tasks returns the names of the tasks w, a *worker.Worker, handles, in
// the order they were registered. It panics for anything else.
func Tasks(w any) []string { return tasksOf(w) }

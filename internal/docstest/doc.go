// Package docstest compiles the Go in the documentation: every ```go block
// of README.md and docs/*.md, and runs the README's example against an
// embedded Redis. It has no code of its own; its test does the work.
//
// A block is one of two things:
//
//   - A whole file: its first line that is not a comment or blank is a
//     package clause. It is compiled as it stands, with the other whole files
//     and fragments of the same page and package name.
//   - A fragment: statements or declarations that need a surrounding file.
//     The block is preceded (blank lines allowed) by an HTML comment, which a
//     rendered page hides, that declares the file around it.
//
// In a wrapper, the fragment takes the place of the line "// block":
//
//	<!-- go:wrap
//	package app
//
//	import "github.com/taskq/taskq/pkg/client"
//
//	func _(c *client.Client) {
//		// block
//	}
//	-->
//	```go
//	ref, err := client.RunNoWait(ctx, c, ...)
//	```
//
// A package named NAME_test makes the block a test file of package NAME: its
// Test and Example functions run.
//
// A block that is neither fails the test, which names its file and line.
// Compiler and vet messages name the page and line of the block (or of its
// wrapper), through //line directives.
//
// In a page, the import path example.com/app/NAME is the page's own package
// NAME (a whole file in that page with "package NAME", or a file in
// testdata/PAGE/NAME, such as a stand-in for a payment service the example
// calls). A module taskq does not depend on may be imported only if
// testdata/stubs holds a stand-in with the parts the page uses
// (go.opentelemetry.io/otel for the tracing example): the page's taskq code
// is then compiled against the stand-in's signatures.
//
// Files in testdata/PAGE/NAME ending in _test.go are that package's tests;
// testdata/readme/app/readme_test.go runs the README's example (trigger,
// worker, result) on miniredis.
//
// All pages are built in one go vet call, and the tests in one go test call,
// in a directory under this one whose name starts with "_" (so ./... never
// sees it), removed when the test ends.
package docstest

// Package webui is taskq's web dashboard, served by `taskq serve` and
// `taskq dev` under /ui/ beside the HTTP API.
//
// Pages are rendered on the server with html/template, which escapes every
// value (a run's input, an idempotency key, an error) for the place it is
// written in; the templates, the stylesheet and the one small script are
// embedded in the binary, so the dashboard works without a network and
// needs no build step. The script only refreshes the parts of a page marked
// data-poll every few seconds: without it every page still works, reloaded
// by hand.
//
// The dashboard reads and acts only through pkg/client's Inspector, as the
// CLI and the HTTP API do; its one record of its own is the signed-in
// sessions (SessionStore, in the namespace's Redis). Where to look next:
//
//   - webui.go: Options, New and the routes.
//   - session.go: signing in with the API token or the read-only token, the
//     session cookie (an HMAC-signed record, never the token), the session's
//     record on the server that sign-out deletes, and the CSRF token every
//     state-changing form carries.
//   - throttle.go: failed sign-ins counted per client address.
//   - pages.go, overview.go, search.go, suppressed.go: what each page reads
//     (the overview counts with CountRuns, searches are ListRuns' Key and
//     Where filters, suppressed triggers come from ListSuppressed).
//   - retry.go: the retry of a failed or cancelled run (RetryRun).
//   - templates/, static/: the markup, style and the polling script. Every
//     table sits in a <div class="table-wrap">, so that it scrolls in its
//     own box on a narrow screen; a key is written with keytext.
package webui

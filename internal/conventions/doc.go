// Package conventions holds no code: its tests check rules the whole
// module follows, which CONTRIBUTING.md states.
package conventions

package webui

import (
	"strings"

	"github.com/taskq/taskq/internal/auth"
)

// scopedRole maps a named token's scopes to what its session may do:
// operate or admin act, read sees; a token of trigger scope alone (or an
// unknown one) does not sign in ("").
func (u *UI) scopedRole(token string) string {
	id, ok := u.opts.Tokens.Authenticate(strings.TrimSpace(token))
	switch {
	case !ok:
		return ""
	case id.Has(auth.ScopeOperate):
		return roleAdmin
	case id.Has(auth.ScopeRead):
		return roleReader
	}
	return ""
}

package webui

import (
	"encoding/json"
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

// webhookSource returns the webhook source an event came from (its
// metadata's webhook.source, which POST /api/v1/webhooks/{source}
// writes), or "" for an event pushed otherwise.
func webhookSource(meta json.RawMessage) string {
	var m struct {
		Webhook struct {
			Source string `json:"source"`
		} `json:"webhook"`
	}
	if len(meta) == 0 || json.Unmarshal(meta, &m) != nil {
		return ""
	}
	return m.Webhook.Source
}

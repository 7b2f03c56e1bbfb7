package client

import (
	"context"
	"slices"
	"strings"
	"time"
)

// RateLimitInfo is a rate limit the registered tasks declare (see
// task.RateLimit), with the units taken in its last period.
type RateLimitInfo struct {
	Name string `json:"name"`
	// Limit is the limit's fixed number, or 0 when LimitExpression computes
	// it for each run.
	Limit           int    `json:"limit"`
	LimitExpression string `json:"limitExpression,omitempty"`
	PeriodMs        int64  `json:"periodMs"`
	// KeyExpression is the limit's key expression ("" for a limit
	// without one); Key the value of the key whose use is shown.
	KeyExpression string `json:"keyExpression,omitempty"`
	Key           string `json:"key,omitempty"`
	// Tasks are the registered tasks that declare the limit, by name.
	Tasks []string `json:"tasks"`
	// Used is the units taken in the last period, by Redis's clock: of the
	// limit for a limit without a key, of Key for one with a key; nil for
	// a keyed limit when no key was asked for.
	Used *int `json:"used,omitempty"`
}

// ListRateLimits lists the rate limits the registered tasks declare, by
// name, each with its use now: the units of a limit without a key, and for
// a limit with one the units of key (none read when key is ""). A limit
// that tasks declare differently is listed as the first of them, by task
// name, declares it.
func (in *Inspector) ListRateLimits(ctx context.Context, key string) ([]RateLimitInfo, error) {
	regs, err := in.c.tasks(ctx)
	if err != nil {
		return nil, err
	}
	byName := map[string]*RateLimitInfo{}
	period := map[string]time.Duration{}
	var out []*RateLimitInfo
	for _, r := range regs {
		for _, l := range r.Spec.RateLimits {
			if info := byName[l.Name]; info != nil {
				info.Tasks = append(info.Tasks, r.Spec.Name)
				continue
			}
			info := &RateLimitInfo{Name: l.Name, Limit: l.Limit, LimitExpression: l.LimitExpression, PeriodMs: l.PeriodUs / 1000, KeyExpression: l.Key,
				Tasks: []string{r.Spec.Name}}
			byName[l.Name], period[l.Name] = info, time.Duration(l.PeriodUs)*time.Microsecond
			out = append(out, info)
		}
	}
	slices.SortFunc(out, func(a, b *RateLimitInfo) int { return strings.Compare(a.Name, b.Name) })
	res := make([]RateLimitInfo, len(out))
	ctx, cancel := in.c.opCtx(ctx)
	defer cancel()
	for i, info := range out {
		if info.KeyExpression != "" {
			if key == "" {
				res[i] = *info
				continue
			}
			info.Key = key
		}
		n, err := in.c.store.RateLimitUse(ctx, info.Name, info.Key, period[info.Name])
		if err != nil {
			return nil, in.c.unavailable(ctx, err)
		}
		info.Used = &n
		res[i] = *info
	}
	return res, nil
}

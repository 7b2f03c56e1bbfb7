package redisstore

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redisguard"
)

// scanRoundsPerPage bounds the SCAN calls of one ScanKeys page, and
// scanWorkMax the COUNT of one, which grows from the page's count while
// calls find nothing: on a Redis full of other keys a page still covers
// tens of thousands of them.
const (
	scanRoundsPerPage = 32
	scanWorkMax       = 2048
)

// ScanKeys pages through the held idempotency keys matching glob (Redis
// MATCH syntax) with SCAN: on every master, in address order, over the
// keys of every partition. It returns the user-visible keys and the cursor
// of the next call ("" when done; start with ""). A key may come twice, as
// SCAN gives no better. A page holds about count keys: SCAN calls go on
// until they have found count, or scanRoundsPerPage calls were made (a
// page may then hold fewer, even none, before the listing ends), or the
// last call found more than were still wanted.
//
// With one partition the MATCH pattern is the home partition's own. With
// more, one pattern matches the keys of all of them, so a master is
// scanned once, not once per partition; what it matches beyond them is
// left out here.
func (s *Store) ScanKeys(ctx context.Context, glob, cursor string, count int64) ([]string, string, error) {
	parts, err := s.Partitions(ctx)
	if err != nil {
		return nil, "", err
	}
	masters, err := s.masters(ctx)
	if err != nil {
		return nil, "", err
	}
	node, scan, err := parseScanCursor(cursor, len(masters))
	if err != nil {
		return nil, "", err
	}
	if glob == "" {
		glob = "*"
	}
	pattern := parts.keys[0].IdempotencyKeyPattern(glob)
	if parts.Count() > 1 {
		// taskq:{ns}:key:<glob> and taskq:{ns#<tag>}:key:<glob>.
		pattern = escapeGlob("taskq:{"+s.keys.ns) + "[}#]*" + escapeGlob(":"+keyIdempotency) + glob
	}
	var out []string
	work := max(count, 1)
	for round := 1; ; round++ {
		ks, next, err := masters[node].Scan(ctx, scan, pattern, work).Result()
		if err != nil {
			return nil, "", err
		}
		found := len(out)
		for _, k := range ks {
			if key, ok := parts.idempotencyKeyOf(k); ok && (parts.Count() == 1 || globMatch(glob, key)) {
				out = append(out, key)
			}
		}
		if len(out) == found {
			work = min(work*2, max(count, scanWorkMax))
		}
		switch {
		case next != 0:
			scan = next
		case node+1 < len(masters):
			node, scan = node+1, 0
		default:
			return out, "", nil
		}
		// Rounds go on, within a budget, while the page is short (a Redis
		// full of other keys), rather than make the caller page through
		// them.
		if int64(len(out)) >= count || round >= scanRoundsPerPage {
			return out, formatScanCursor(node, scan, len(masters)), nil
		}
	}
}

// idempotencyKeyOf is the user-visible key of the Redis key of an
// idempotency key of one of the partitions; ok is false for any other key.
func (p *Partitions) idempotencyKeyOf(redisKey string) (string, bool) {
	for _, ks := range p.keysOf(redisKey) {
		if rest, ok := strings.CutPrefix(redisKey, ks.prefix+keyIdempotency); ok {
			return rest, true
		}
	}
	return "", false
}

// keysOf returns the key builder of the partition whose prefix redisKey
// starts with, if any.
func (p *Partitions) keysOf(redisKey string) []Keys {
	home := p.keys[0].prefix
	if strings.HasPrefix(redisKey, home) {
		return p.keys[:1]
	}
	if len(p.keys) == 1 {
		return nil
	}
	open := "taskq:{" + p.ns + "#"
	if !strings.HasPrefix(redisKey, open) {
		return nil
	}
	rest := redisKey[len(open):]
	end := 0
	for end < len(rest) && rest[end] >= '0' && rest[end] <= '9' {
		end++
	}
	i, err := strconv.Atoi(rest[:end])
	if err != nil || i < 1 || i >= len(p.keys) || !strings.HasPrefix(redisKey, p.keys[i].prefix) {
		return nil
	}
	return p.keys[i : i+1]
}

// masters returns a client of every master, in address order.
func (s *Store) masters(ctx context.Context) ([]*redis.Client, error) {
	if c, ok := s.rdb.(*redis.Client); ok {
		return []*redis.Client{c}, nil
	}
	var (
		mu  sync.Mutex
		out []*redis.Client
	)
	err := redisguard.ForEachMaster(ctx, s.rdb, func(_ context.Context, c *redis.Client) error {
		mu.Lock()
		out = append(out, c)
		mu.Unlock()
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, errors.New("redisstore: no Redis master to scan")
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Options().Addr < out[j].Options().Addr })
	return out, nil
}

// A scan cursor is SCAN's own cursor on a single master, and
// "<master>-<cursor>" across several (the master's index in address
// order).
func formatScanCursor(node int, scan uint64, masters int) string {
	if masters == 1 {
		return strconv.FormatUint(scan, 10)
	}
	return strconv.Itoa(node) + "-" + strconv.FormatUint(scan, 10)
}

func parseScanCursor(c string, masters int) (node int, scan uint64, err error) {
	if c == "" {
		return 0, 0, nil
	}
	bad := fmt.Errorf("%w: %q", engine.ErrInvalidCursor, c)
	n, sc, several := strings.Cut(c, "-")
	if several != (masters > 1) {
		return 0, 0, bad
	}
	if several {
		if node, err = strconv.Atoi(n); err != nil || node < 0 || node >= masters {
			return 0, 0, bad
		}
	} else {
		sc = n
	}
	if scan, err = strconv.ParseUint(sc, 10, 64); err != nil || (scan == 0 && node == 0) {
		return 0, 0, bad
	}
	return node, scan, nil
}

// globMatch reports whether s matches pattern as Redis's MATCH does
// (stringmatchlen: * ? [abc] [^a] [a-z] and \ escapes), case-sensitively.
func globMatch(pattern, s string) bool {
	for len(pattern) > 0 {
		switch pattern[0] {
		case '*':
			for len(pattern) > 1 && pattern[1] == '*' {
				pattern = pattern[1:]
			}
			if len(pattern) == 1 {
				return true
			}
			for i := 0; i <= len(s); i++ {
				if globMatch(pattern[1:], s[i:]) {
					return true
				}
			}
			return false
		case '?':
			if len(s) == 0 {
				return false
			}
			s = s[1:]
		case '[':
			if len(s) == 0 {
				return false
			}
			pattern = pattern[1:]
			not := len(pattern) > 0 && pattern[0] == '^'
			if not {
				pattern = pattern[1:]
			}
			match := false
			// An unclosed class ends with the pattern, as in Redis.
			for len(pattern) > 0 {
				if pattern[0] == '\\' && len(pattern) >= 2 {
					pattern = pattern[1:]
					if pattern[0] == s[0] {
						match = true
					}
				} else if pattern[0] == ']' {
					break
				} else if len(pattern) >= 3 && pattern[1] == '-' {
					lo, hi := pattern[0], pattern[2]
					if lo > hi {
						lo, hi = hi, lo
					}
					if s[0] >= lo && s[0] <= hi {
						match = true
					}
					pattern = pattern[2:]
				} else if pattern[0] == s[0] {
					match = true
				}
				pattern = pattern[1:]
			}
			if not {
				match = !match
			}
			if !match {
				return false
			}
			s = s[1:]
			if len(pattern) == 0 {
				return len(s) == 0
			}
		case '\\':
			if len(pattern) >= 2 {
				pattern = pattern[1:]
			}
			fallthrough
		default:
			if len(s) == 0 || pattern[0] != s[0] {
				return false
			}
			s = s[1:]
		}
		pattern = pattern[1:]
	}
	return len(s) == 0
}

#!lua flags=allow-oom
-- ratelimit_take.lua: takes units of rate limits for runs about to start,
-- any number of requests per call (all of them on limits of one
-- partition), each as if on its own. A limit's log is a sorted set of the
-- units it gave out, one member per unit scored by the time it was taken,
-- so that at most limit units are taken in any window of one period: a
-- sliding window, exact at every instant, not a count per fixed window
-- (which lets twice the limit through across a boundary). Units older
-- than the period leave the log at each call, and the log expires one
-- period after its last take, so a log holds at most limit members.
--
-- KEYS: KEY_COUNT (0) before ITEM_KEY_COUNT (1) per request i, at i+1:
--   +0 ITEM_KEY_LIMIT  limit log  taskq:{ns}:ratelimit:<name>:<key>
-- ARGV: ARG_COUNT (1) first,
--   ARGV[1] ARG_NOW  now (unix µs), or "" to read the server's clock
--                    (TIME): every worker then measures one limit by the
--                    same clock, whatever the skew between their own
-- then ITEM_ARG_COUNT (4) per request i, at 4i+2 .. 4i+5:
--   +0 ITEM_ARG_TOKEN   a token unique to the request: the units taken are
--                       the members <token> (one unit) or <token>:1 ..
--                       <token>:<units>, which ratelimit_return.lua removes
--   +1 ITEM_ARG_UNITS   units to take (1 .. limit)
--   +2 ITEM_ARG_LIMIT   most units in any window of one period
--   +3 ITEM_ARG_PERIOD  the period (µs)
-- Returns a flat array with two values per request, in order:
--   1, used   taken; used is the units in the window now, these included
--   0, wait   not taken, nothing written; wait is how long (µs) until
--             enough units leave the window for the request, at the
--             earliest (another request may take them first)
--   an error reply "TASKQ_WRONGTYPE <key> <type>", ""  when the log key
--             holds something else than a sorted set; nothing written
-- On a read-only replica the call fails with READONLY, nothing written. It
-- runs at maxmemory (flag allow-oom): a run already accepted must be able
-- to start while new triggers are refused (see docs/operations.md), and a
-- log is bounded by its limit.

local now = ARGV[ARG_NOW]
if now == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
else
  now = tonumber(now)
end

local function take(log, token, units, limit, period)
  local r = redis.pcall('ZREMRANGEBYSCORE', log, '-inf', string.format('%d', now - period))
  if type(r) == 'table' and r.err then
    return taskq_failed(log, r), ''
  end
  local used = redis.call('ZCARD', log)
  if used + units > limit then
    -- The (used + units - limit)-th oldest unit must leave first.
    local e = redis.call('ZRANGE', log, used + units - limit - 1, used + units - limit - 1, 'WITHSCORES')
    local wait = period
    if e[2] then
      wait = tonumber(e[2]) + period - now
    end
    return 0, string.format('%d', math.max(wait, 1))
  end
  local at = string.format('%d', now)
  if units == 1 then
    redis.call('ZADD', log, at, token)
  else
    -- In slices, as unpack's results must fit Lua's stack.
    for lo = 1, units, 500 do
      local args, n = {}, 0
      for u = lo, math.min(lo + 499, units) do
        args[n + 1], args[n + 2] = at, token .. ':' .. u
        n = n + 2
      end
      redis.call('ZADD', log, unpack(args))
    end
  end
  redis.call('PEXPIRE', log, math.floor(period / 1000) + 1)
  return 1, used + units
end

local out = {}
local a = ARG_COUNT + 1 -- the first request's ARGV
for i = 1, (#KEYS - KEY_COUNT) / ITEM_KEY_COUNT do
  out[2 * i - 1], out[2 * i] = take(KEYS[KEY_COUNT + (i - 1) * ITEM_KEY_COUNT + ITEM_KEY_LIMIT + 1],
    ARGV[a + ITEM_ARG_TOKEN], tonumber(ARGV[a + ITEM_ARG_UNITS]), tonumber(ARGV[a + ITEM_ARG_LIMIT]),
    tonumber(ARGV[a + ITEM_ARG_PERIOD]))
  a = a + ITEM_ARG_COUNT
end
return out

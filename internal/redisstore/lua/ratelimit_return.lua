#!lua flags=allow-oom
-- ratelimit_return.lua: gives back the units ratelimit_take.lua took for
-- requests whose run is not starting after all (another of its limits
-- refused it), any number of requests per call, each as if on its own.
-- Units already out of the window are gone with it; giving back twice
-- removes nothing the second time.
--
-- KEYS: KEY_COUNT (0) before ITEM_KEY_COUNT (1) per request i, at i+1:
--   +0 ITEM_KEY_LIMIT  limit log  taskq:{ns}:ratelimit:<name>:<key>
-- ARGV: ARG_COUNT (0) before ITEM_ARG_COUNT (2) per request i, at 2i+1
-- and 2i+2:
--   +0 ITEM_ARG_TOKEN  the request's token
--   +1 ITEM_ARG_UNITS  the units it took
-- Returns an array with, per request, the units removed from the log, or
-- an error reply "TASKQ_WRONGTYPE <key> <type>" when the log key holds
-- something else than a sorted set (nothing written for that request).
-- On a read-only replica the call fails with READONLY, nothing written. It
-- runs at maxmemory (flag allow-oom): it only frees memory.

local function give_back(log, token, units)
  local members = {}
  if units == 1 then
    members[1] = token
  else
    for u = 1, units do
      members[u] = token .. ':' .. u
    end
  end
  local n = 0
  -- In slices, as unpack's results must fit Lua's stack.
  for lo = 1, #members, 1000 do
    local r = redis.pcall('ZREM', log, unpack(members, lo, math.min(lo + 999, #members)))
    if type(r) == 'table' and r.err then
      return taskq_failed(log, r)
    end
    n = n + r
  end
  return n
end

local out = {}
local a = ARG_COUNT + 1 -- the first request's ARGV
for i = 1, (#KEYS - KEY_COUNT) / ITEM_KEY_COUNT do
  out[i] = give_back(KEYS[KEY_COUNT + (i - 1) * ITEM_KEY_COUNT + ITEM_KEY_LIMIT + 1], ARGV[a + ITEM_ARG_TOKEN],
    tonumber(ARGV[a + ITEM_ARG_UNITS]))
  a = a + ITEM_ARG_COUNT
end
return out

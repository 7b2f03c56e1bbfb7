#!lua flags=allow-oom
-- concurrency_renew.lua: renews the leases of slots a worker holds, any
-- number per call (all groups of one partition). A slot is renewed only
-- while the token given still holds it.
--
-- KEYS: KEY_COUNT (0) before ITEM_KEY_COUNT (2) per item i (i = 0, 1, ...),
-- at 2i+1 and 2i+2:
--   +0 ITEM_KEY_HOLDERS  holders  taskq:{ns}:conc:h:<task>[#<limit>]|<group>
--   +1 ITEM_KEY_OWNERS   owners   taskq:{ns}:conc:o:<task>[#<limit>]|<group>
-- ARGV: ARG_COUNT (1) first,
--   ARGV[1] ARG_NOW  now (unix ms)
-- then ITEM_ARG_COUNT (3) per item i, at 3i+2 .. 3i+4:
--   +0 ITEM_ARG_RUN_ID  run id
--   +1 ITEM_ARG_TOKEN   the holder's token
--   +2 ITEM_ARG_LEASE   lease from now (ms)
-- Returns one value per item: 1 renewed, 0 the slot is not held with that
-- token (it lapsed, or another delivery took it over), or an error reply
-- "TASKQ_WRONGTYPE <key> <type>" (nothing written for the item).
-- On a read-only replica the call fails with READONLY, nothing written. It
-- runs at maxmemory (flag allow-oom): it writes a score.

local now = tonumber(ARGV[ARG_NOW])

local function renew(holders, owners, run_id, token, lease)
  local s = redis.pcall('ZSCORE', holders, run_id)
  if type(s) == 'table' and s.err then
    return taskq_failed(holders, s)
  end
  local o = redis.pcall('HGET', owners, run_id)
  if type(o) == 'table' and o.err then
    return taskq_failed(owners, o)
  end
  if not s or tonumber(s) < now or taskq_conc_token(o) ~= token then
    return 0
  end
  redis.call('ZADD', holders, 'XX', string.format('%d', now + tonumber(lease)), run_id)
  return 1
end

local out = {}
local k, a = KEY_COUNT + 1, ARG_COUNT + 1 -- the first item's KEYS and ARGV
for i = 1, (#KEYS - KEY_COUNT) / ITEM_KEY_COUNT do
  out[i] = renew(KEYS[k + ITEM_KEY_HOLDERS], KEYS[k + ITEM_KEY_OWNERS], ARGV[a + ITEM_ARG_RUN_ID],
    ARGV[a + ITEM_ARG_TOKEN], ARGV[a + ITEM_ARG_LEASE])
  k, a = k + ITEM_KEY_COUNT, a + ITEM_ARG_COUNT
end
return out

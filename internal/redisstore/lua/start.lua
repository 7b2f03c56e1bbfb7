#!lua flags=allow-oom
-- start.lua: begins attempts of runs a worker has just read (or reclaimed)
-- from their task streams, any number per call, each as if on its own. The
-- attempt number returned is the fencing token: finish.lua and
-- heartbeat.lua accept only the latest attempt.
--
-- KEYS: KEY_COUNT (0) before ITEM_KEY_COUNT (2) per delivery i (i = 0, 1, ...),
-- at 2i+1 and 2i+2:
--   +0 ITEM_KEY_RUN     run hash      taskq:{ns}:run:<run id>
--   +1 ITEM_KEY_STREAM  task stream   taskq:{ns}:stream:<task>
-- ARGV: ARG_COUNT (4) first,
--   ARGV[1] ARG_GROUP     consumer group
--   ARGV[2] ARG_CONSUMER  consumer name
--   ARGV[3] ARG_NOW       now (unix ms)
--   ARGV[4] ARG_PREFIX    key prefix taskq:{ns}:
-- then ITEM_ARG_COUNT (4) per delivery i, at 4i+5 .. 4i+8:
--   +0 ITEM_ARG_RUN_ID          run id
--   +1 ITEM_ARG_ENTRY           stream entry id being delivered
--   +2 ITEM_ARG_MAX_DELIVERIES  maximum deliveries, from the entry's spec (see
--                               taskq_spec); "" when the entry carries no
--                               spec, and the reply then carries the record's
--   +3 ITEM_ARG_REDELIVERED     "1" when the entry was delivered before
--                               (reclaimed after its lease lapsed), else "":
--                               an earlier delivery that began no attempt
--                               (its worker died before it was begun, see
--                               finish.lua) still counts
-- A delivery taken over from a running attempt (its lease lapsed) appends
-- that attempt to the run's attempt history (taskq_add_attempt) as
-- "lapsed".
-- Returns a flat array with three values per delivery, in order (Redis
-- turns a table in a reply into a reply much more slowly than a plain
-- value):
--   1, attempt, fails    started (fails "" for a delivery with a spec, which
--                        says it); for a delivery without a spec, four more
--                        values follow: input, meta, key and the record's
--                        spec (RUN_SPEC)
--   0, reason, error     not started, the entry is acknowledged and deleted;
--                        reason is "missing" (no record), "stale" (an older
--                        delivery of the run), "exhausted" (too many
--                        deliveries: the run is now failed), or the run's
--                        terminal status, and then error is the run's error
--                        (why it was cancelled: "superseded by run <id>"),
--                        so that a worker whose handler already runs it
--                        tells the handler what the cancel notice would
--   an error reply "TASKQ_WRONGTYPE <key> <type>", "", ""  when the run key
--                        holds something else than a run; nothing is written
--                        for that delivery
-- On a read-only replica the call fails with READONLY, nothing written. It
-- runs at maxmemory (flag allow-oom): a run already accepted must be able
-- to run, end and free its memory while new triggers are refused (see
-- docs/operations.md); it adds a few fields to the record.

local group, consumer, now, prefix = ARGV[ARG_GROUP], ARGV[ARG_CONSUMER], ARGV[ARG_NOW], ARGV[ARG_PREFIX]

-- Acknowledges and deletes a delivery that begins no attempt: the reply
-- values for it. Its values come as arguments: a function of the call that
-- reads its locals costs Redis more to make.
local function drop(consumer_group, stream, entry, reason, err)
  taskq_drop(stream, consumer_group, entry)
  return 0, reason, err or ''
end

-- Each delivery's attempt: c, x, y in the reply and, for a delivery
-- without a spec, the record's values. It is written in the loop rather
-- than as a function: the call would make such a function anew each time
-- it runs (a closure over the call's locals).
local out, n = {}, 0
local k, a = KEY_COUNT + 1, ARG_COUNT + 1 -- the first delivery's KEYS and ARGV
for _ = 1, (#KEYS - KEY_COUNT) / ITEM_KEY_COUNT do
  local run_key, stream, run_id = KEYS[k + ITEM_KEY_RUN], KEYS[k + ITEM_KEY_STREAM], ARGV[a + ITEM_ARG_RUN_ID]
  local entry, maxdel, redelivered = ARGV[a + ITEM_ARG_ENTRY], ARGV[a + ITEM_ARG_MAX_DELIVERIES],
    ARGV[a + ITEM_ARG_REDELIVERED]
  local c, x, y, record
  repeat -- once: a break ends the delivery
    local r
    if maxdel == '' then
      r = redis.pcall('HMGET', run_key, RUN_STATUS, RUN_ENTRY, RUN_ATTEMPT, RUN_FAILS, RUN_SPEC, RUN_INPUT, RUN_META,
        RUN_IDEMPOTENCY_KEY)
    else
      r = redis.pcall('HMGET', run_key, RUN_STATUS, RUN_ENTRY, RUN_ATTEMPT)
    end
    if r.err then
      c, x, y, record = taskq_failed(run_key, r), '', ''
      break
    end
    local status = r[1]
    if not status then
      c, x, y, record = drop(group, stream, entry, 'missing')
      break
    end
    if taskq_is_terminal(status) then
      c, x, y, record = drop(group, stream, entry, status, redis.call('HGET', run_key, RUN_ERROR))
      break
    end
    if r[2] ~= entry then
      c, x, y, record = drop(group, stream, entry, 'stale')
      break
    end
    local attempt = (tonumber(r[3]) or 0) + 1
    if status == 'running' then
      -- The attempt before this one lapsed: its worker stopped renewing the
      -- lease and the delivery was taken over. It goes into the attempt
      -- history (a delivery's first start reads no more than before).
      local p = redis.call('HMGET', run_key, RUN_STARTED, RUN_CONSUMER, RUN_FLAGS)
      taskq_add_attempt(prefix, run_key, run_id, p[3], r[3], 'lapsed', p[1] or '', now, p[2],
        'lease lapsed: its worker stopped renewing it, and the run was delivered again')
    end
    if redelivered == '1' and status == 'queued' then
      attempt = attempt + 1
    end
    local spec = maxdel == '' and taskq_record_spec(run_key, r[5])
    local max = tonumber(maxdel ~= '' and maxdel or taskq_spec_values(spec)[SPEC_MAX_DELIVERIES]) or 0
    -- Attempts that ended waiting are not deliveries that count: read
    -- only past the limit, so a start costs no more.
    if max > 0 and attempt > max and
        attempt - (tonumber(redis.call('HGET', run_key, RUN_WAITS)) or 0) > max then
      taskq_terminate(prefix, group, run_key, run_id, 'failed', now, RUN_ERROR,
        'delivered ' .. max .. ' times without finishing (workers died or lost their lease)')
      c, x, y, record = 0, 'exhausted', ''
      break
    end
    -- The attempt number goes as a string: Redis formats a Lua number passed
    -- to a command with a printf of its own, at a cost.
    redis.call('HSET', run_key, RUN_STATUS, 'running', RUN_ATTEMPT, string.format('%d', attempt), RUN_STARTED, now,
      RUN_CONSUMER, consumer)
    if maxdel ~= '' then
      c, x, y, record = 1, attempt, ''
      break
    end
    c, x, y, record = 1, attempt, tonumber(r[4]) or 0, {r[6] or '', r[7] or '', r[8] or '', spec or ''}
  until true
  out[n + 1], out[n + 2], out[n + 3] = c, x, y
  n = n + 3
  if record then
    for j = 1, #record do
      out[n + j] = record[j]
    end
    n = n + #record
  end
  k, a = k + ITEM_KEY_COUNT, a + ITEM_ARG_COUNT
end
return out

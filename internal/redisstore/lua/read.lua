#!lua flags=allow-oom
-- read.lua: reads new deliveries of a partition's task streams, each
-- task's in the order of their priority: as many as it may from the lane
-- of priority 3, then 2, then the task's stream (the default, 1), up to
-- ARG_WANTED per task. A lower priority is not starved: per task, the
-- turns hash counts the runs of a higher priority read while one of a
-- lower priority may have waited; once that count reaches ARG_BOUND the
-- lower priority is read next, one run, and its count starts again (a
-- priority found empty starts again too). A run at the head of its stream
-- is thus read after at most ARG_BOUND + 1 runs of a higher priority of
-- its task in its partition (+ 1 when the priority between is due at the
-- same read, and is read first). Workers call it while runs of a priority
-- above the default wait (see fetcher.go); it does not block.
--
-- KEYS: KEY_COUNT (1):
--   KEYS[1] KEY_TURNS  turns hash  taskq:{ns}:turns
-- The streams, taskq:{ns}:stream:<task> and its lanes
-- taskq:{ns}:stream:<task>|p2 and |p3, are built from the prefix: they
-- share the turns hash's hash tag.
-- ARGV: ARG_COUNT (5) first,
--   ARGV[1] ARG_GROUP     consumer group
--   ARGV[2] ARG_CONSUMER  consumer name
--   ARGV[3] ARG_PREFIX    key prefix taskq:{ns}:
--   ARGV[4] ARG_WANTED    most deliveries per task
--   ARGV[5] ARG_BOUND     runs of a higher priority read before a lower
--                         priority's turn (at least 1)
-- then ITEM_ARG_COUNT (1) per task i, at i+6:
--   +0  ITEM_ARG_TASK  task name
-- Returns a flat array: first 1 when a lane above the default of some task
-- may still hold runs (the caller reads with this script again), else 0;
-- then for each read of some entries, the task's place among the tasks
-- (from 1), the priority read and the entries, as XREADGROUP replies them
-- ({id, {field, value, ...}} each).
-- Errors: NOGROUP when a stream has no consumer group (EnsureGroup makes
-- them); "TASKQ_WRONGTYPE <key> <type>" when the turns hash holds another
-- type; READONLY on a read-only replica. The entries read before an error
-- stay pending to the consumer, and are reclaimed once their lease lapses.
-- Runs at maxmemory (flag allow-oom), as a plain read does: workers drain
-- the queue while new triggers are refused; it writes two counters a task.

local turns, group, consumer, prefix = KEYS[KEY_TURNS], ARGV[ARG_GROUP], ARGV[ARG_CONSUMER], ARGV[ARG_PREFIX]
local wanted, bound = tonumber(ARGV[ARG_WANTED]), math.max(tonumber(ARGV[ARG_BOUND]), 1)
local e = taskq_check_type(turns, 'hash')
if e then
  return e
end

local out, more = {0}, 0
for i = ARG_COUNT + 1, #ARGV, ITEM_ARG_COUNT do
  local task = ARGV[i + ITEM_ARG_TASK]
  local base = taskq_key_stream(prefix, task)
  local fields = {task .. '|1', task .. '|2'}
  local c = redis.call('HMGET', turns, fields[1], fields[2])
  -- waited[p]: runs of a higher priority read since priority p was read;
  -- empty[p]: priority p has nothing left to read in this call.
  local waited, empty = {tonumber(c[1]) or 0, tonumber(c[2]) or 0}, {}
  local left = wanted
  while left > 0 do
    local p, n
    if not empty[2] and waited[2] >= bound then
      p, n = 2, 1
    elseif not empty[1] and waited[1] >= bound then
      p, n = 1, 1
    else
      for q = 3, 1, -1 do
        if not empty[q] then
          p = q
          break
        end
      end
      if not p then
        break
      end
      -- No more than the lower priorities may wait for.
      n = left
      for q = 1, p - 1 do
        if not empty[q] then
          n = math.min(n, bound - waited[q])
        end
      end
    end
    local r = redis.call('XREADGROUP', 'GROUP', group, consumer, 'COUNT', n, 'STREAMS', taskq_lane(base, tostring(p)),
      '>')
    local got = r and r[1][2] or {}
    local m = #got
    if m < n then
      empty[p] = true
    end
    if p < 3 then
      waited[p] = 0
    end
    if m > 0 then
      out[#out + 1], out[#out + 2], out[#out + 3] = (i - ARG_COUNT - 1) / ITEM_ARG_COUNT + 1, p, got
      left = left - m
      for q = 1, p - 1 do
        if not empty[q] then
          waited[q] = waited[q] + m
        end
      end
    end
  end
  for q = 1, 2 do
    if empty[q] then
      waited[q] = 0
    end
  end
  if not empty[3] or not empty[2] then
    more = 1
  end
  if waited[1] ~= (tonumber(c[1]) or 0) or waited[2] ~= (tonumber(c[2]) or 0) then
    redis.call('HSET', turns, fields[1], waited[1], fields[2], waited[2])
  end
end
out[1] = more
return out

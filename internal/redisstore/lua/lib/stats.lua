-- stats.lua: run statistics, the per-minute counters of each partition
-- (keyStatsMinute and keyStatsCoarse in layout.go), shared by enqueue.lua,
-- start.lua and finish.lua. A call gathers its counts by task in tables
-- made with its first count, as numbers (a field name is made once per
-- distinct field, not per run), and writes each distinct field once at its
-- end with one HINCRBY per hash: a call of one task's runs, whose
-- durations mostly share a few buckets, pays a few commands rather than
-- two per run. Every write is a pcall: statistics never fail a trigger or
-- an attempt (at maxmemory, on a key of the wrong type).
--
-- A count's code is STATS_CODE_<kind> + a * 256 + b: a the duration's
-- bucket, b a second bucket, the queue wait of an attempt begun and ended
-- in the same call (one field counts both), or STATS_NO_BUCKET.

-- The log-scale bucket of a duration of ms milliseconds: four buckets per
-- power of two, from frexp's mantissa and exponent, so that Go computes
-- the same bucket exactly (StatsBucket in stats.go); 0 below 1 ms, and at
-- most 254.
local function taskq_stats_bucket(ms)
  if ms < 1 then
    return 0
  elseif ms >= 1e15 then -- 2^49.8 ms, some 35,000 years: nothing real
    return 254
  end
  local m, e = math.frexp(ms)
  return e * 4 + math.floor((m - 0.5) * 8)
end

-- Adds one to code of task in st, the call's counts (nil before the
-- first); returns st.
local function taskq_stats_count(st, task, code)
  st = st or {}
  local c = st[task]
  if c then
    c[code] = (c[code] or 0) + 1
  else
    st[task] = {[code] = 1}
  end
  return st
end

-- The field of code of task: "<task>|<kind>", "<task>|<kind>|<a>" or
-- "<task>|<kind>|<a>|<b>".
local function taskq_stats_field(task, code)
  local kind, a, b = code - code % 65536, math.floor(code / 256) % 256, code % 256
  if kind == STATS_CODE_DUPLICATE then
    return task .. STATS_SEP .. STATS_DUPLICATE
  end
  local k = STATS_WAIT
  if kind == STATS_CODE_SUCCEEDED then
    k = STATS_SUCCEEDED
  elseif kind == STATS_CODE_FAILED then
    k = STATS_FAILED
  elseif kind == STATS_CODE_RETRIED then
    k = STATS_RETRIED
  end
  if b == STATS_NO_BUCKET then
    return task .. STATS_SEP .. k .. STATS_SEP .. a
  end
  return task .. STATS_SEP .. k .. STATS_SEP .. a .. STATS_SEP .. b
end

-- Adds the counts of st to the partition's minute and coarse hashes of
-- the time now (unix ms). A hash gets its expiry when a field is made in
-- it (HINCRBY answers the count added), which its first write always
-- does: the hashes of a busy minute are not sent PEXPIREAT on every call.
local function taskq_stats_write(prefix, now, st)
  local m, c = math.floor(now / STATS_MINUTE_MS), math.floor(now / STATS_COARSE_MS)
  local km, kc = taskq_key_stats_minute(prefix, m), taskq_key_stats_coarse(prefix, c)
  local newm, newc = false, false
  for task, counts in pairs(st) do
    for code, n in pairs(counts) do
      local field = taskq_stats_field(task, code)
      if redis.pcall('HINCRBY', km, field, n) == n then
        newm = true
      end
      if redis.pcall('HINCRBY', kc, field, n) == n then
        newc = true
      end
    end
  end
  if newm then
    redis.pcall('PEXPIREAT', km, string.format('%d', (m + 1) * STATS_MINUTE_MS + STATS_MINUTE_KEEP_MS))
  end
  if newc then
    redis.pcall('PEXPIREAT', kc, string.format('%d', (c + 1) * STATS_COARSE_MS + STATS_COARSE_KEEP_MS))
  end
end

-- stats.lua: run statistics, the per-minute counters of each partition
-- (keyStatsMinute and keyStatsCoarse in layout.go), shared by enqueue.lua,
-- start.lua and finish.lua. A call gathers its counts in one table, made
-- with its first count, and writes each field once at its end: a call of
-- one task's runs, whose durations mostly share a few buckets, pays a few
-- HINCRBY rather than two per run. Every write is a pcall: statistics
-- never fail a trigger or an attempt (at maxmemory, on a key of the wrong
-- type).

-- The log-scale bucket of a duration of ms milliseconds: four buckets per
-- power of two, from frexp's mantissa and exponent, so that Go computes
-- the same bucket exactly (statsBucket in stats.go); 0 below 1 ms.
local function taskq_stats_bucket(ms)
  if ms < 1 then
    return 0
  end
  local m, e = math.frexp(ms)
  return e * 4 + math.floor((m - 0.5) * 8)
end

-- Adds the counts of t (field -> count) to the partition's minute and
-- coarse hashes of the time now (unix ms). A hash gets its expiry when a
-- field is made in it (HINCRBY answers the count added), which its first
-- write always does: the hashes of a busy minute are not sent PEXPIREAT on
-- every call.
local function taskq_stats_write(prefix, now, t)
  local m, c = math.floor(now / STATS_MINUTE_MS), math.floor(now / STATS_COARSE_MS)
  local km, kc = taskq_key_stats_minute(prefix, m), taskq_key_stats_coarse(prefix, c)
  local newm, newc = false, false
  for field, n in pairs(t) do
    if redis.pcall('HINCRBY', km, field, n) == n then
      newm = true
    end
    if redis.pcall('HINCRBY', kc, field, n) == n then
      newc = true
    end
  end
  if newm then
    redis.pcall('PEXPIREAT', km, string.format('%d', (m + 1) * STATS_MINUTE_MS + STATS_MINUTE_KEEP_MS))
  end
  if newc then
    redis.pcall('PEXPIREAT', kc, string.format('%d', (c + 1) * STATS_COARSE_MS + STATS_COARSE_KEEP_MS))
  end
end

-- link_retry.lua: links a run and its retry, one side per call (the two
-- runs may live in different partitions): the retry's RUN_RETRY_OF names
-- the run it retries, the retried run's RUN_RETRIED_BY names its retry. A
-- record that is gone (expired) is left alone, so that no link creates a
-- record without its expiry, and a link already set to another run is
-- kept.
--
-- KEYS: KEY_COUNT (1)
--   KEYS[1] KEY_RUN     run hash  taskq:{ns}:run:<id>
-- ARGV: ARG_COUNT (2)
--   ARGV[1] ARG_FIELD   the link to write: RUN_RETRY_OF or RUN_RETRIED_BY
--   ARGV[2] ARG_RUN_ID  the other run's id
-- Returns 1 when written (or already naming that run), 0 when the record
-- is gone, or the run the link already names. Fails with OOM at maxmemory
-- and READONLY on a read-only replica, nothing written.

local field = ARGV[ARG_FIELD]
if field ~= RUN_RETRY_OF and field ~= RUN_RETRIED_BY then
  return redis.error_reply('ERR link_retry: ' .. field .. ' is not a link field')
end
if redis.call('EXISTS', KEYS[KEY_RUN]) == 0 then
  return 0
end
local cur = redis.call('HGET', KEYS[KEY_RUN], field)
if cur and cur ~= ARGV[ARG_RUN_ID] then
  return cur
end
redis.call('HSET', KEYS[KEY_RUN], field, ARGV[ARG_RUN_ID])
return 1

-- release.lua: frees an idempotency key only if the expected run still owns
-- it (compare-and-delete), for operators releasing a key by hand.
--
-- KEYS: KEY_COUNT (1)
--   KEYS[1] KEY_IDEMPOTENCY  idempotency key  taskq:{ns}:key:<key>
-- ARGV: ARG_COUNT (1)
--   ARGV[1] ARG_OWNER        expected owner run id
-- Returns 1 when released, 0 when the key is gone or owned by another run.
-- Fails with READONLY on a read-only replica, nothing written. Redis runs
-- it at maxmemory: DEL frees memory, Redis does not refuse it there.

if redis.call('GET', KEYS[KEY_IDEMPOTENCY]) == ARGV[ARG_OWNER] then
  redis.call('DEL', KEYS[KEY_IDEMPOTENCY])
  return 1
end
return 0

-- release.lua: frees an idempotency key only if the expected run still owns
-- it (compare-and-delete), for operators releasing a key by hand.
--
-- KEYS[1] idempotency key   taskq:{ns}:key:<key>
-- ARGV[1] expected owner run id
-- Returns 1 when released, 0 when the key is gone or owned by another run.
-- Fails with READONLY on a read-only replica, nothing written. Redis runs
-- it at maxmemory: DEL frees memory, Redis does not refuse it there.

if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0

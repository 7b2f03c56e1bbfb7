-- enqueue.lua: claims an idempotency key, creates the run record and queues
-- the run, as one step. Redis does not roll a script back when a command
-- fails midway, so every key is checked before the first write: either all
-- of key, record and stream entry are written, or none is.
--
-- KEYS[1] run hash          taskq:{ns}:run:<run id>
-- KEYS[2] task stream       taskq:{ns}:stream:<task>
-- KEYS[3] runs index        taskq:{ns}:runs
-- KEYS[4] idempotency key   taskq:{ns}:key:<key>   (absent when ARGV[6] is "none")
-- ARGV[1]  run id
-- ARGV[2]  task name
-- ARGV[3]  input (JSON)
-- ARGV[4]  additional metadata (JSON)
-- ARGV[5]  idempotency key as the user sees it ("" when not deduplicated)
-- ARGV[6]  strategy: none | ttl | status
-- ARGV[7]  hold ms: the ttl for "ttl", the fallback ttl for "status"
-- ARGV[8]  retain ms after the run ends ("status" only; 0 releases at once)
-- ARGV[9]  retries allowed after handler failures
-- ARGV[10] maximum deliveries (bounds redeliveries of runs whose worker died)
-- ARGV[11] handler timeout ms (0 = none)
-- ARGV[12] record retention ms after the run ends
-- ARGV[13] now (unix ms)
-- Returns:
--   {1, entry id}                 accepted
--   {0, owner run id, pttl ms}    the key is held by another run; nothing written
-- Errors, with nothing written:
--   "TASKQ_WRONGTYPE <key> <type>"  a key holds a value of the wrong type
--   "TASKQ_EXISTS <run id>"         a run record with this ID exists

local function check_type(key, want)
  local t = redis.call('TYPE', key)['ok']
  if t ~= 'none' and t ~= want then
    return redis.error_reply('TASKQ_WRONGTYPE ' .. key .. ' ' .. t)
  end
  return nil
end

local dedup = ARGV[6] ~= 'none'
if dedup then
  local err = check_type(KEYS[4], 'string')
  if err then return err end
  local owner = redis.call('GET', KEYS[4])
  if owner then
    return {0, owner, redis.call('PTTL', KEYS[4])}
  end
end
if redis.call('EXISTS', KEYS[1]) == 1 then
  return redis.error_reply('TASKQ_EXISTS ' .. ARGV[1])
end
local err = check_type(KEYS[2], 'stream') or check_type(KEYS[3], 'zset')
if err then return err end

if dedup then
  redis.call('SET', KEYS[4], ARGV[1], 'PX', ARGV[7])
end
redis.call('HSET', KEYS[1],
  'task', ARGV[2], 'status', 'queued', 'input', ARGV[3], 'meta', ARGV[4],
  'key', ARGV[5], 'strat', ARGV[6], 'hold', ARGV[7], 'retain', ARGV[8],
  'retries', ARGV[9], 'maxdel', ARGV[10], 'timeout', ARGV[11], 'keep', ARGV[12],
  'attempt', 0, 'fails', 0, 'created', ARGV[13])
local entry = redis.call('XADD', KEYS[2], '*', 'r', ARGV[1])
redis.call('HSET', KEYS[1], 'entry', entry)
redis.call('ZADD', KEYS[3], ARGV[13], ARGV[1])
return {1, entry}

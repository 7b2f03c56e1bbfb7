-- multi.lua: several calls of one script in one, for a Redis Cluster node
-- that serves the slots of several partitions (see multi.go). Each
-- script's multi function (flagged allow-cross-slot-keys) runs the
-- script's body once per call, in order, and replies with an array of
-- their replies.
--
-- The function's KEYS: one key of the first call, which routes the call
-- to its node (not read here). Its ARGV, handed here as packed: the number
-- of calls; then, per call, the number of its KEYS, the number of its
-- ARGV, its KEYS and its ARGV.
--
-- Redis does not undo a call that fails halfway, so before anything runs
-- every call's slot is checked to be this node's (a failover or a slot
-- migration may have moved one since the client looked): a read of one
-- key of each call. One that is not answers TASKQ_NOTLOCAL, having
-- written nothing, and the client sends the calls one by one. A call
-- whose body fails (raises, or replies an error) does not stop the
-- others: its item of the reply is the error, prefixed TASKQ_CALL (a
-- client reads an array to its end only past errors of codes it does not
-- type).
local function taskq_multi(body, packed)
  local n, at, calls = tonumber(packed[1]), 2, {}
  for c = 1, n do
    local nk, na = tonumber(packed[at]), tonumber(packed[at + 1])
    local k, a = at + 2, at + 2 + nk
    calls[c] = {{unpack(packed, k, a - 1)}, {unpack(packed, a, a + na - 1)}}
    at = a + na
  end
  -- The first call's slot is the declared key's: Redis checked it.
  for c = 2, n do
    local r = redis.pcall('EXISTS', calls[c][1][1])
    if type(r) == 'table' and r.err then
      return redis.error_reply('TASKQ_NOTLOCAL call ' .. c .. ' of ' .. n .. ': ' .. r.err)
    end
  end
  local out = {}
  for c = 1, n do
    local ok, r = pcall(body, calls[c][1], calls[c][2])
    if not ok then
      r = {err = type(r) == 'table' and r.err or tostring(r)}
    end
    if type(r) == 'table' and r.err then
      r = {err = 'TASKQ_CALL ' .. string.gsub(r.err, '^%-', '')}
    elseif r == nil then
      r = false
    end
    out[c] = r
  end
  return out
end

-- record_children.lua: records the children a run spawned (see
-- children.go), each in the run's children hash under its name.
--
-- In mode record, a name recorded before keeps its first record (the
-- first spawn of a name wins, as a durable step's first result does, so
-- a retried or redelivered parent gets the child it spawned before), and
-- the run is marked as having children (flag d): ending it expires them
-- with its record (taskq_end), cancelling it adds it to the partition's
-- cascades (taskq_terminate), whose children a worker cancels. A run that
-- has ended, or has no record, records nothing: a child recorded once its
-- parent was cancelled could be missed by the cascade.
--
-- In mode mark, each record given replaces the one under its name, where
-- there is one: its child was created. It writes nothing else.
--
-- KEYS: KEY_COUNT (2)
--   KEYS[1] KEY_CHILDREN  children hash  taskq:{ns}:children:<run id>
--   KEYS[2] KEY_RUN       run hash       taskq:{ns}:run:<run id>
-- ARGV: ARG_COUNT (1) first,
--   ARGV[1] ARG_MODE  record | mark
-- then ITEM_ARG_COUNT (2) per child i, at 2i+2 .. 2i+3:
--   +0  ITEM_ARG_NAME    the child's name
--   +1  ITEM_ARG_RECORD  the child's record (JSON)
-- Returns, in mode record, a flat array: the run's status, then the record
-- stored under each child's name, in order; the status alone ('' for no
-- record) when the run has ended or has no record, nothing written. In mode
-- mark, how many records were replaced.
-- Fails with OOM when Redis is at maxmemory (a child's record is new data,
-- as a trigger is) and READONLY on a read-only replica, nothing written;
-- with "TASKQ_WRONGTYPE <key> <type>" when the children hash is not a hash.

local children, run_key = KEYS[KEY_CHILDREN], KEYS[KEY_RUN]
local bad = taskq_check_type(children, 'hash')
if bad then
  return bad
end
local n = (#ARGV - ARG_COUNT) / ITEM_ARG_COUNT
if ARGV[ARG_MODE] == 'mark' then
  local marked = 0
  for i = 0, n - 1 do
    local a = ARG_COUNT + ITEM_ARG_COUNT * i + 1
    local name = ARGV[a + ITEM_ARG_NAME]
    if redis.call('HEXISTS', children, name) == 1 then
      redis.call('HSET', children, name, ARGV[a + ITEM_ARG_RECORD])
      marked = marked + 1
    end
  end
  return marked
end
local status = redis.call('HGET', run_key, RUN_STATUS)
if not status or taskq_is_terminal(status) then
  return {status or ''}
end
local out = {status}
for i = 0, n - 1 do
  local a = ARG_COUNT + ITEM_ARG_COUNT * i + 1
  local name = ARGV[a + ITEM_ARG_NAME]
  redis.call('HSETNX', children, name, ARGV[a + ITEM_ARG_RECORD])
  out[i + 2] = redis.call('HGET', children, name)
end
taskq_flag(run_key, 'd')
return out

--[[
  Append one event to an experiment's stream, only while the experiment exists: a worker still
  running after its Redis lost its data must not create an orphan stream in the fresh one.

  An `output` event (a rank's line that is not a final answer) is also held to the experiment's
  output budget (jobs/line-limit.ts OUTPUT_PER_EXPERIMENT), counted here across every rank and
  block, so many ranks together cannot fill Redis: one that would pass the budget is dropped and
  counted, and the first one dropped writes the truncation note (ARGV[4]) in its place, once.
  An `essential` event (a final answer, a worker event) is always appended: there is one per
  request or per step of the block's life, so the plan bounds them.
  `dropped` only adds to the dropped counts: output the worker dropped itself (its rep bound, or
  after this script told it the budget was spent), so the totals stay exact.

  Input:
    KEYS[1] experiment hash ('<prefix>:experiment:<id>')
    KEYS[2] event stream    ('<prefix>:experiment:<id>:events')
    KEYS[3] output budget   ('<prefix>:experiment:<id>:event-budget'; hash lines bytes dropped_lines dropped_bytes noted)

    ARGV[1] 'essential' | 'output' | 'dropped'
    ARGV[2] output: the budget's lines; dropped: the lines to count
    ARGV[3] output: the budget's bytes; dropped: the bytes to count
    ARGV[4] output: the truncation note, the event written in place of the first one dropped
    ARGV[5] an event's bytes beyond its values (EVENT_OVERHEAD_BYTES)
    ARGV[6..] the entry's (field, value) pairs; the field `event` holds the line

  Returns:
    the entry id; 'dropped' when the budget refused the event (the note was written in its place
    the first time); 'counted' for `dropped`; false (nil) when the experiment does not exist
]]
if redis.call("EXISTS", KEYS[1]) == 0 then
  return false
end
local class = ARGV[1]
if class == "dropped" then
  redis.call("HINCRBY", KEYS[3], "dropped_lines", ARGV[2])
  redis.call("HINCRBY", KEYS[3], "dropped_bytes", ARGV[3])
  return "counted"
end
local fields = {}
local size = tonumber(ARGV[5])
for i = 6, #ARGV do
  fields[#fields + 1] = ARGV[i]
  size = size + #ARGV[i]
end
if class == "essential" then
  return redis.call("XADD", KEYS[2], "*", unpack(fields))
end
local used = redis.call("HMGET", KEYS[3], "lines", "bytes")
local lines = tonumber(used[1] or "0")
local bytes = tonumber(used[2] or "0")
if lines + 1 > tonumber(ARGV[2]) or bytes + size > tonumber(ARGV[3]) then
  local first = redis.call("HSETNX", KEYS[3], "noted", 1) == 1
  redis.call("HINCRBY", KEYS[3], "dropped_lines", 1)
  redis.call("HINCRBY", KEYS[3], "dropped_bytes", size)
  if first then
    for i = 1, #fields, 2 do
      if fields[i] == "event" then fields[i + 1] = ARGV[4] end
    end
    redis.call("XADD", KEYS[2], "*", unpack(fields))
  end
  return "dropped"
end
redis.call("HINCRBY", KEYS[3], "lines", 1)
redis.call("HINCRBY", KEYS[3], "bytes", size)
return redis.call("XADD", KEYS[2], "*", unpack(fields))

--[[
  Append one event to an experiment's stream, only while the experiment exists: a worker still
  running after its Redis lost its data must not create an orphan stream in the fresh one.

  Input:
    KEYS[1] experiment hash ('<prefix>:experiment:<id>')
    KEYS[2] event stream    ('<prefix>:experiment:<id>:events')

    ARGV[1..] the entry's (field, value) pairs

  Returns:
    the entry id; false (nil) when the experiment does not exist
]]
if redis.call("EXISTS", KEYS[1]) == 0 then
  return false
end
return redis.call("XADD", KEYS[2], "*", unpack(ARGV))

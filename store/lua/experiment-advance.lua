--[[
  Move an experiment from queued to ARGV[1] (running), and only from queued: an experiment that
  ended or is being cancelled is never moved back.

  KEYS[1] experiment hash ('<prefix>:experiment:<id>')
  ARGV[1] the new state

  Returns the state before the call (nil when the experiment does not exist).
]]
local s = redis.call('HGET', KEYS[1], 'state')
if s == 'queued' then
  redis.call('HSET', KEYS[1], 'state', ARGV[1])
end
return s

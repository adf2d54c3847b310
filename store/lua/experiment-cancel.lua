--[[
  Ask for an experiment's cancellation: queued or running → cancelling, with the reason.

  KEYS[1] experiment hash ('<prefix>:experiment:<id>')
  ARGV[1] reason

  Returns 'cancelling' when it moved, else the state it is in (nil when it does not exist).
]]
local s = redis.call('HGET', KEYS[1], 'state')
if s == 'queued' or s == 'running' then
  redis.call('HSET', KEYS[1], 'state', 'cancelling', 'reason', ARGV[1])
  return 'cancelling'
end
return s

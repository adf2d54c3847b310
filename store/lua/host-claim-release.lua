--[[
  Give up a host name's worker claim (a clean stop), only while this worker holds it.

  KEYS[1] the host's claim key
  ARGV[1] the holder's token

  Returns 1 when released, 0 when another worker holds it (or nobody does).
]]
if redis.call('HGET', KEYS[1], 'token') == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0

--[[
  Take or keep the scheduler leadership.

  KEYS[1] leader key (string: the holder's id, PX TTL)
  ARGV[1] candidate id
  ARGV[2] ttl in ms

  Returns 1 when the candidate holds the lease after the call (taken now or renewed),
          0 when someone else holds it.
  A holder that lost the key (expired, then taken by another) cannot renew: it must step down.
]]
local holder = redis.call('GET', KEYS[1])
if holder == false then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', tonumber(ARGV[2]))
  return 1
end
if holder == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]))
  return 1
end
return 0

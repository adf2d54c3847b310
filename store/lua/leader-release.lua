--[[
  Give up the scheduler leadership, only if still held by this candidate.

  KEYS[1] leader key
  ARGV[1] candidate id

  Returns 1 when released, 0 when not held by the candidate.
]]
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0

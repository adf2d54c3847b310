--[[
  Take or keep a host name's worker claim: one worker per host name.

  KEYS[1] the host's claim key (hash { token, pid, machine, started }, PX TTL)
  ARGV[1] the claimant's token (random per worker process)
  ARGV[2] its pid
  ARGV[3] the machine it runs on (os.hostname())
  ARGV[4] when it started (epoch ms)
  ARGV[5] ttl in ms (two heartbeats)

  Returns {1} when the claimant holds the claim after the call (taken now or renewed),
          {0, pid, machine, started} of the holder when another worker holds it.
  A claim whose holder stopped heartbeating expires; the next claimant takes it.
]]
local token = redis.call('HGET', KEYS[1], 'token')
if token == false then
  redis.call('DEL', KEYS[1])
  redis.call('HSET', KEYS[1], 'token', ARGV[1], 'pid', ARGV[2], 'machine', ARGV[3], 'started', ARGV[4])
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[5]))
  return {1}
end
if token == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[5]))
  return {1}
end
local h = redis.call('HMGET', KEYS[1], 'pid', 'machine', 'started')
return {0, h[1] or '?', h[2] or '?', h[3] or '0'}

--[[
  Consume a signed job's nonce: the first call for a nonce takes it, every later one is a replay
  and is counted as a refusal. One script, so two workers taking copies of one job at the same
  moment cannot both see the nonce unused.

  KEYS[1] the nonce key (keys.ts grantNonce)
  KEYS[2] the refused-jobs counter hash (keys.ts refusedJobs)
  ARGV[1] TTL of the nonce key in ms (past the grant's expiry: a later copy is refused by its expiry)
  ARGV[2] who consumed it (the job id, for an operator reading the key)
  ARGV[3] the counter field a replay increments ("<queue kind>/GRANT_REPLAYED")

  Returns 1 when the nonce was unused and is now consumed, 0 when it had been consumed (a replay).
]]
if redis.call('SET', KEYS[1], ARGV[2], 'NX', 'PX', ARGV[1]) then
  return 1
end
redis.call('HINCRBY', KEYS[2], ARGV[3], 1)
return 0

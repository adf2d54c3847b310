--[[
  Retention of one ended experiment's keys: an expiry on each of them (after its results were
  written), or their removal (orch prune). A running experiment is never touched, whatever the
  caller read before: the state is checked here, in the same call that acts.

  KEYS[1] experiment hash ('<prefix>:experiment:<id>')
  KEYS[2] all experiments ('<prefix>:exps', zset by seq)
  KEYS[3..N] the experiment's other keys ('<prefix>:experiment:<id>:*', as SCAN found them)

  ARGV[1] experiment id
  ARGV[2] 'expire' or 'remove'
  ARGV[3] expire: seconds to keep the keys; remove: the cutoff, ms since the epoch (the
          experiment must have ended at or before it)

  Returns 1 when it acted, 0 when the experiment has not ended (or, for remove, ended after the
  cutoff). An experiment whose hash is gone (expired) has its id and leftover keys removed: 1.
]]
local rcall = redis.call
local state = rcall('HGET', KEYS[1], 'state')
if state and state ~= 'done' and state ~= 'failed' and state ~= 'cancelled' then
  return 0
end
if ARGV[2] == 'expire' then
  if not state then return 0 end
  for i = 1, #KEYS do
    if i ~= 2 then rcall('EXPIRE', KEYS[i], tonumber(ARGV[3])) end
  end
  return 1
end
if state then
  local ended = tonumber(rcall('HGET', KEYS[1], 'ended') or '')
  if ended == nil or ended > tonumber(ARGV[3]) then return 0 end
end
for i = 1, #KEYS do
  if i ~= 2 then rcall('DEL', KEYS[i]) end
end
rcall('ZREM', KEYS[2], ARGV[1])
return 1

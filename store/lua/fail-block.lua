--[[
  Record why the reps of a failed block attempt were not measured. Not fenced by the epoch: a
  failure record never counts as a measurement; a later attempt that commits the rep deletes
  it (commit-block.lua). An older attempt never overwrites a newer attempt's reason.
  With them, the last lines each rank that failed printed (jobs/rank-output-tail.ts): at most
  ARGV[3] records per experiment, so a program failing in every block cannot fill Redis.

  Input:
    KEYS[1] failed hash   ('<prefix>:experiment:<id>:failed', field "<block>/<arm>/<rep>")
    KEYS[2] commits hash  ('<prefix>:experiment:<id>:commits')
    KEYS[3] experiment hash ('<prefix>:experiment:<id>'): nothing is written without it, so a
            Redis that lost its data never gets an orphan failed hash
    KEYS[4] rank output hash ('<prefix>:experiment:<id>:rank-output', field "<block>/<attempt>/<rank>")

    ARGV[1] block index
    ARGV[2] attempt
    ARGV[3] the most rank output records the experiment keeps
    ARGV[4] n: how many (field, json RankOutputTail) pairs follow
    ARGV[5 .. 4+2n] those pairs
    ARGV[5+2n ..] (field, json { reason, attempt }) pairs

  Returns:
    number of fields written; 0 when the block already has a committed attempt; -1 when the
    experiment does not exist
]]
--@include recorded-attempt
local rcall = redis.call
if rcall("EXISTS", KEYS[3]) == 0 then
  return -1
end
if rcall("HEXISTS", KEYS[2], ARGV[1]) == 1 then
  return 0
end
local attempt = tonumber(ARGV[2])
local keep = tonumber(ARGV[3])
local outputs = tonumber(ARGV[4])
for a = 5, 4 + 2 * outputs, 2 do
  if rcall("HLEN", KEYS[4]) < keep then
    rcall("HSET", KEYS[4], ARGV[a], ARGV[a + 1])
  end
end
local n = 0
for a = 5 + 2 * outputs, #ARGV, 2 do
  local prior = recorded_attempt(rcall("HGET", KEYS[1], ARGV[a]))
  if not (prior and prior > attempt) then
    rcall("HSET", KEYS[1], ARGV[a], ARGV[a + 1])
    n = n + 1
  end
end
return n

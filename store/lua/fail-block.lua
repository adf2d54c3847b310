--[[
  Record why the reps of a failed block attempt were not measured. Not fenced by the epoch: a
  failure record never counts as a measurement; a later attempt that commits the rep deletes
  it (commit-block.lua). An older attempt never overwrites a newer attempt's reason.

  Input:
    KEYS[1] failed hash   ('<prefix>:experiment:<id>:failed', field "<block>/<arm>/<rep>")
    KEYS[2] commits hash  ('<prefix>:experiment:<id>:commits')
    KEYS[3] experiment hash ('<prefix>:experiment:<id>'): nothing is written without it, so a
            Redis that lost its data never gets an orphan failed hash

    ARGV[1] block index
    ARGV[2] attempt
    ARGV[3..] (field, json { reason, attempt }) pairs

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
local n = 0
for a = 3, #ARGV, 2 do
  local prior = recorded_attempt(rcall("HGET", KEYS[1], ARGV[a]))
  if not (prior and prior > attempt) then
    rcall("HSET", KEYS[1], ARGV[a], ARGV[a + 1])
    n = n + 1
  end
end
return n

--[[
  Settling an experiment: record as not measured every planned rep of an ended block that has
  neither a result nor a failure record. Fenced by the block's state: refused unless the block
  is stored ended (done, failed, cancelled) at the given attempt, so a rep is never accounted
  while an attempt could still commit it. A rep with a result (committed) is never marked
  failed; a failure record of the same or a newer attempt is kept (its reason is the specific one).

  Input:
    KEYS[1] results hash  ('<prefix>:experiment:<id>:results', field "<block>/<arm>/<rep>")
    KEYS[2] failed hash   ('<prefix>:experiment:<id>:failed',  same fields)
    KEYS[3] blocks hash   ('<prefix>:experiment:<id>:blocks', field "<block>")

    ARGV[1] block index
    ARGV[2] the block's last attempt (0 when it never ran)
    ARGV[3..] (field, json { reason, attempt }) pairs: the block's planned reps

  Returns:
    number of fields written; -1 when the block is not stored ended at that attempt
]]
--@include block-state-is
--@include recorded-attempt
local rcall = redis.call
local st = block_state(KEYS[3], ARGV[1])
local ended = { done = true, failed = true, cancelled = true }
if st == nil or not ended[st.phase] or tonumber(st.attempt) ~= tonumber(ARGV[2]) then
  return -1
end
local attempt = tonumber(ARGV[2])
local n = 0
for a = 3, #ARGV, 2 do
  if rcall("HEXISTS", KEYS[1], ARGV[a]) == 0 then
    local prior = recorded_attempt(rcall("HGET", KEYS[2], ARGV[a]))
    if not (prior and prior >= attempt) then
      rcall("HSET", KEYS[2], ARGV[a], ARGV[a + 1])
      n = n + 1
    end
  end
end
return n

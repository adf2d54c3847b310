--[[
  Which of these cards are leased now: the grant pass's view of the busy cards, in one call and
  a reply of a few numbers (reading every lease hash of the cluster on every pass cost more to
  decode than the grants it decided).

  Input:
    KEYS[1..N] lease keys ('<prefix>:lease:<card>')

    ARGV: none

  Returns:
    the 1-based indexes into KEYS of the lease keys that exist
]]
local out = {}
for i = 1, #KEYS do
  if redis.call("EXISTS", KEYS[i]) == 1 then
    out[#out + 1] = i
  end
end
return out

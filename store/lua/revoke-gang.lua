--[[
  Revoke a gang's leases (scheduler side: cancel, a failed rank elsewhere in the gang, a lost
  host) and tell the owning worker at once. The worker also finds out at its next renew.

  Input:
    KEYS[1..N] lease keys

    ARGV[1] epoch, or '*' for whatever gang holds each key
    ARGV[2] pub/sub channel ('<prefix>:lease-revoked')
    ARGV[3] reason (free text, reaches the block's failure reason)
    ARGV[4..N+3] card ids, in the order of KEYS

  Returns:
    number of lease keys deleted. When > 0, publishes on ARGV[2] the JSON
    { cards: [card ids deleted], epochs: [their epochs], reason }
]]
local rcall = redis.call
local cards = {}
local epochs = {}
for i = 1, #KEYS do
  local e = rcall("HGET", KEYS[i], "epoch")
  if e and (ARGV[1] == "*" or e == ARGV[1]) then
    rcall("DEL", KEYS[i])
    cards[#cards + 1] = ARGV[i + 3]
    -- spliced as the stored digits: cjson writes numbers with 14 significant digits, and epochs
    -- have 16 (acquire-gang.lua seeds them from now_ms * 1000)
    epochs[#epochs + 1] = string.match(e, "^%d+$") or "0"
  end
end
if #cards > 0 then
  rcall("PUBLISH", ARGV[2], '{"cards":' .. cjson.encode(cards) .. ',"epochs":[' .. table.concat(epochs, ",") ..
    '],"reason":' .. cjson.encode(ARGV[3]) .. '}')
end
return #cards

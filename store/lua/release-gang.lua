--[[
  Give back the leases of a gang: deletes each lease key still held under the gang's epoch
  (a key re-granted to a newer gang is left alone).

  Input:
    KEYS[1..N] lease keys of the gang

    ARGV[1] epoch

  Returns:
    number of lease keys deleted
]]
local rcall = redis.call
local n = 0
for i = 1, #KEYS do
  if rcall("HGET", KEYS[i], "epoch") == ARGV[1] then
    rcall("DEL", KEYS[i])
    n = n + 1
  end
end
return n

--[[
  Write the probe records of one block attempt (design probe), fenced like commit-block.lua: only
  while every card of the gang is leased under this epoch and before the block has a committed
  attempt. Written before the block commits, so a commit never exists without its probes; a
  record of an attempt that then fails to commit stays until a later attempt overwrites its
  field, and readers keep only the committed attempt's records.

  Input:
    KEYS[1] probes hash   ('<prefix>:experiment:<id>:probes', field "<block>/<arm>/<rep>")
    KEYS[2] commits hash  ('<prefix>:experiment:<id>:commits', field "<block>")
    KEYS[3] experiment hash ('<prefix>:experiment:<id>'): nothing is written without it
    KEYS[4..] lease keys of the gang

    ARGV[1] epoch
    ARGV[2] block index
    ARGV[3..] (field, json ProbeRecord) pairs

  Returns:
    { 1 }                      written
    { 0, 'EPOCH', i, epoch }   lease KEYS[3 + i] holds another epoch ('' when gone): refused
    { 0, 'GONE' }              the experiment hash does not exist: refused
    { 0, 'COMMITTED' }         the block already has a committed attempt: refused
]]
--@include lease-fence
local rcall = redis.call
local stale, held = lease_fence(4, ARGV[1])
if stale then
  return { 0, "EPOCH", stale, held }
end
if rcall("EXISTS", KEYS[3]) == 0 then
  return { 0, "GONE" }
end
if rcall("HEXISTS", KEYS[2], ARGV[2]) == 1 then
  return { 0, "COMMITTED" }
end
for a = 3, #ARGV, 2 do
  rcall("HSET", KEYS[1], ARGV[a], ARGV[a + 1])
end
return { 1 }

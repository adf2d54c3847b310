--[[
  Stage one host part's results of a spread block attempt, fenced by the gang's epoch: the
  leading part commits every part's results in one commit-block call once all parts staged.
  Refused when any card of the part is no longer leased under the epoch (a revoked gang's part
  never counts).

  Input:
    KEYS[1] staged hash ('<prefix>:experiment:<id>:staged:<block>:<attempt>', field host)
    KEYS[2..] lease keys of the part's cards

    ARGV[1] epoch
    ARGV[2] host (the field)
    ARGV[3] the part's staged JSON
    ARGV[4] ttl of the staged hash in milliseconds

  Returns:
    { 1 }                     staged
    { 0, i, epoch }           lease KEYS[1 + i] holds another epoch ('' when gone): refused
]]
--@include lease-fence
local rcall = redis.call
local stale, held = lease_fence(2, ARGV[1])
if stale then
  return { 0, stale, held }
end
rcall("HSET", KEYS[1], ARGV[2], ARGV[3])
rcall("PEXPIRE", KEYS[1], tonumber(ARGV[4]))
return { 1 }

--[[
  Commit the results of one block attempt, once, fenced by the lease epoch
  (include/lease-fence.lua): refused when any card of the gang is no longer leased under this
  epoch (a revoked or expired attempt is never counted) or when another attempt of the block
  already committed.

  Input:
    KEYS[1] results hash  ('<prefix>:experiment:<id>:results', field "<block>/<arm>/<rep>")
    KEYS[2] failed hash   ('<prefix>:experiment:<id>:failed',  same fields)
    KEYS[3] gates hash    ('<prefix>:experiment:<id>:gates',   field "<block>/<arm>")
    KEYS[4] commits hash  ('<prefix>:experiment:<id>:commits', field "<block>")
    KEYS[5] experiment hash ('<prefix>:experiment:<id>'): nothing is written without it (a
            Redis that lost its data, a lease written by hand)
    KEYS[6..] lease keys of the gang

    ARGV[1] epoch
    ARGV[2] block index (the commits field)
    ARGV[3] commit record JSON (jobs/commit-record.ts: attempt, epoch, host, committed, timeline, startup, ranks, hosts)
    ARGV[4] number of result pairs R
    ARGV[5] number of failed pairs F (reps of this attempt that did not run: SIGTERM)
    ARGV[6] number of gate pairs G
    ARGV[7..] R result (field, json) pairs, then F failed pairs, then G gate pairs

  Returns:
    { 1 }                      committed; failed entries of the committed reps are deleted
    { 0, 'EPOCH', i, epoch }   lease KEYS[5 + i] holds another epoch ('' when gone): refused
    { 0, 'GONE' }              the experiment hash does not exist: refused
    { 0, 'COMMITTED', record } the block already has a committed attempt: refused
]]
--@include lease-fence
local rcall = redis.call
local stale, held = lease_fence(6, ARGV[1])
if stale then
  return { 0, "EPOCH", stale, held }
end
if rcall("EXISTS", KEYS[5]) == 0 then
  return { 0, "GONE" }
end
local prior = rcall("HGET", KEYS[4], ARGV[2])
if prior then
  return { 0, "COMMITTED", prior }
end
local r = tonumber(ARGV[4])
local f = tonumber(ARGV[5])
local g = tonumber(ARGV[6])
local a = 7
for _ = 1, r do
  rcall("HSET", KEYS[1], ARGV[a], ARGV[a + 1])
  rcall("HDEL", KEYS[2], ARGV[a])
  a = a + 2
end
for _ = 1, f do
  rcall("HSET", KEYS[2], ARGV[a], ARGV[a + 1])
  a = a + 2
end
for _ = 1, g do
  rcall("HSET", KEYS[3], ARGV[a], ARGV[a + 1])
  a = a + 2
end
rcall("HSET", KEYS[4], ARGV[2], ARGV[3])
return { 1 }

--[[
  Grant a gang of card leases: all N cards or none.

  Input:
    KEYS[1]      lease epoch counter ('<prefix>:lease-epoch')
    KEYS[2..N+1] lease keys ('<prefix>:lease:<card>'), one per rank of the gang

    ARGV[1] owner: the host whose worker will run the gang (only it may renew)
    ARGV[2] ttl in milliseconds
    ARGV[3] experiment id
    ARGV[4] block index

  The epoch counter is seeded from Redis's clock (now_ms * 1000) whenever it is below that: a
  Redis that restarted without its data would otherwise count from 1 again and hand out epochs
  a worker of the old data may still hold, so a stale commit or renew could match a new gang.

  Returns:
    { 1, epoch }                          granted; epoch is the fencing token of every card
    { 0, i, owner, epoch, experiment, block }
                                          not granted: KEYS[i + 1] is held (nothing written)
]]
--@include now-ms
local rcall = redis.call
for i = 2, #KEYS do
  if rcall("EXISTS", KEYS[i]) == 1 then
    local h = rcall("HMGET", KEYS[i], "owner", "epoch", "experiment", "block")
    return { 0, i - 1, h[1] or "", h[2] or "", h[3] or "", h[4] or "" }
  end
end
local now = now_ms()
local floor = now * 1000
if (tonumber(rcall("GET", KEYS[1])) or 0) < floor then
  rcall("SET", KEYS[1], string.format("%d", floor))
end
local epoch = rcall("INCR", KEYS[1])
local ttl = tonumber(ARGV[2])
for i = 2, #KEYS do
  rcall("HSET", KEYS[i], "owner", ARGV[1], "epoch", epoch, "experiment", ARGV[3], "block", ARGV[4],
    "expires", now + ttl)
  rcall("PEXPIRE", KEYS[i], ttl)
end
return { 1, epoch }

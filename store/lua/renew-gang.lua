--[[
  Extend every lease of a gang, or none: the worker's heartbeat while the gang's ranks live.

  Input:
    KEYS[1..N] lease keys of the gang

    ARGV[1] owner (the renewing host)
    ARGV[2] epoch (the gang's fencing token)
    ARGV[3] ttl in milliseconds

  Returns:
    { 1 }                     every lease extended
    { 0, i, reason }          nothing extended: KEYS[i] is 'missing' (expired, released or
                              revoked), or held under 'epoch <e>' / 'owner <o>' (re-granted)
]]
--@include now-ms
local rcall = redis.call
for i = 1, #KEYS do
  local h = rcall("HMGET", KEYS[i], "owner", "epoch")
  if not h[2] then
    return { 0, i, "missing" }
  end
  if h[2] ~= ARGV[2] then
    return { 0, i, "epoch " .. h[2] }
  end
  if h[1] ~= ARGV[1] then
    return { 0, i, "owner " .. h[1] }
  end
end
local now = now_ms()
local ttl = tonumber(ARGV[3])
for i = 1, #KEYS do
  rcall("HSET", KEYS[i], "expires", now + ttl)
  rcall("PEXPIRE", KEYS[i], ttl)
end
return { 1 }

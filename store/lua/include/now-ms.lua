-- Redis's own clock in ms: every host's lease expiry is measured against one clock.
local function now_ms()
  local t = redis.call("TIME")
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

--[[
  Folds measured step times into a workload's running mean, atomically: two blocks ending at
  once each add their steps (a read in TypeScript then a write lost one of the two updates).

  Input:
    KEYS[1] the step history hash ('<prefix>:sched:history'), field workload key →
            JSON { ms_per_step, n }

    ARGV[1] the workload key
    ARGV[2] the sum of the new step times, ms
    ARGV[3] how many steps

  Returns:
    the new n
]]
local prior = redis.call("HGET", KEYS[1], ARGV[1])
local mean, n = 0, 0
if prior then
  local ok, h = pcall(cjson.decode, prior)
  if ok and type(h) == "table" and tonumber(h.n) and tonumber(h.ms_per_step) then
    mean, n = tonumber(h.ms_per_step), tonumber(h.n)
  end
end
local add = tonumber(ARGV[3])
local total = n + add
local value = (mean * n + tonumber(ARGV[2])) / total
redis.call("HSET", KEYS[1], ARGV[1], cjson.encode({ ms_per_step = value, n = total }))
return total

--[[
  The state of each of these experiments, in one call: the grant pass reads every active
  experiment's state on every pass, and one HGET each was most of the commands it sent.

  Input:
    KEYS[1..N] experiment hashes ('<prefix>:experiment:<id>')

    ARGV: none

  Returns:
    one entry per key, in order: its `state` field, or false when the experiment is gone
]]
local out = {}
for i = 1, #KEYS do
  out[i] = redis.call("HGET", KEYS[i], "state")
end
return out

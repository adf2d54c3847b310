--[[
  Move one block's scheduling state, compare-and-set on (phase, attempt): written only when the
  stored state is still the one the caller read. Every change of a block's state after submit
  goes through here or block-begin-attempt.lua.

  Input:
    KEYS[1] blocks hash ('<prefix>:experiment:<id>:blocks', field "<block>")

    ARGV[1] block index
    ARGV[2] expected phase (waiting | running | done | failed | cancelled)
    ARGV[3] expected attempt
    ARGV[4] the new BlockState JSON

  Returns:
    { 1 }            written
    { 0, current }   the stored state differs (current: its JSON, '' when absent): nothing written
]]
--@include block-state-is
local same, raw = block_state_is(KEYS[1], ARGV[1], ARGV[2], ARGV[3])
if not same then
  return { 0, raw }
end
redis.call("HSET", KEYS[1], ARGV[1], ARGV[4])
return { 1 }

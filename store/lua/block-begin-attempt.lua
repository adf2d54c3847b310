--[[
  Record a granted attempt of a block: attempt N + 1 is written only when the stored state is
  still (waiting, N). Two processors of one block (a re-delivered BullMQ job, a deposed leader
  still running) may both be granted cards; only the first records its attempt, the other sees
  0 and undoes its grant, so an attempt number is dispatched at most once. Moves the experiment
  from queued to running in the same step.

  Input:
    KEYS[1] blocks hash      ('<prefix>:experiment:<id>:blocks', field "<block>")
    KEYS[2] experiment hash  ('<prefix>:experiment:<id>')

    ARGV[1] block index
    ARGV[2] N: the attempt the caller read in the waiting state
    ARGV[3] the new BlockState JSON (phase running, attempt N + 1)

  Returns:
    { 1 }            recorded
    { 0, current }   the stored state is not (waiting, N) (current: its JSON, '' when absent)
]]
--@include block-state-is
local same, raw = block_state_is(KEYS[1], ARGV[1], "waiting", ARGV[2])
if not same then
  return { 0, raw }
end
redis.call("HSET", KEYS[1], ARGV[1], ARGV[3])
if redis.call("HGET", KEYS[2], "state") == "queued" then
  redis.call("HSET", KEYS[2], "state", "running")
end
return { 1 }

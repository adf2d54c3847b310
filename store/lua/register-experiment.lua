--[[
  Register an experiment and take its place in the queue, atomically: the submission order
  (seq) is the order in which experiments become visible to the scheduler, so two submits that
  race can never be seen out of order.

  KEYS[1] seq counter        ('<prefix>:sched:seq')
  KEYS[2] experiment hash    ('<prefix>:experiment:<id>')
  KEYS[3] block states hash  ('<prefix>:experiment:<id>:blocks')
  KEYS[4] all experiments    ('<prefix>:exps', zset by seq)
  KEYS[5] active experiments ('<prefix>:sched:active', zset by seq)

  ARGV[1] experiment id
  ARGV[2] number of experiment hash pairs E
  ARGV[3 .. 2+2E] experiment hash (field, value) pairs
  ARGV[3+2E ..] block states (field, value) pairs

  Returns the seq.
]]
local rcall = redis.call
if rcall('EXISTS', KEYS[2]) == 1 then
  return redis.error_reply('experiment ' .. ARGV[1] .. ' already registered')
end
local seq = rcall('INCR', KEYS[1])
local e = tonumber(ARGV[2])
for i = 3, 2 + 2 * e, 2 do
  rcall('HSET', KEYS[2], ARGV[i], ARGV[i + 1])
end
rcall('HSET', KEYS[2], 'seq', seq)
for i = 3 + 2 * e, #ARGV, 2 do
  rcall('HSET', KEYS[3], ARGV[i], ARGV[i + 1])
end
rcall('ZADD', KEYS[4], seq, ARGV[1])
rcall('ZADD', KEYS[5], seq, ARGV[1])
return seq

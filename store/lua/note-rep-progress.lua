--[[
  Note one rep a running block attempt has measured (store/rep-progress.ts), only while the
  experiment exists: a worker still running after its Redis lost its data must not create an
  orphan key in the fresh one. A live count, not the record: a rep counts once its block commits.

  Input:
    KEYS[1] experiment hash ('<prefix>:experiment:<id>')
    KEYS[2] progress hash   ('<prefix>:experiment:<id>:progress')

    ARGV[1] the attempt's field ('<block>/<attempt>'), its count of measured reps
    ARGV[2] the block's field of its latest rep ('<block>/latest')
    ARGV[3] the latest rep as JSON (store/rep-progress.ts LatestRepSchema)

  Returns:
    the attempt's count of measured reps; 0 when the experiment does not exist
]]
if redis.call("EXISTS", KEYS[1]) == 0 then
  return 0
end
redis.call("HSET", KEYS[2], ARGV[2], ARGV[3])
return redis.call("HINCRBY", KEYS[2], ARGV[1], 1)

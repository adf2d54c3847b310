--[[
  Publish rank 0's bytes of one exchange (ranklib/PROTOCOL.md "Exchange") for a gang's block
  attempt, once: the first publication of a key wins; publishing it again with the same bytes is
  a no-op (a rank 0 retrying its line), with other bytes a refusal (every rank must get the same).

  Input:
    KEYS[1] exchange hash ('<prefix>:experiment:<id>:exchange:<block>:<attempt>', field = key)

    ARGV[1] key
    ARGV[2] the bytes, base64
    ARGV[3] ttl of the hash in milliseconds

  Returns:
    1   published
    2   already published with these bytes
    0   already published with other bytes: refused
]]
local set = redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[3]))
if set == 1 then return 1 end
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then return 2 end
return 0

-- block_state(key, block): the stored BlockState of `block` in blocks hash `key`, decoded, and
-- its raw JSON; nil, nil when absent or unreadable.
-- block_state_is(key, block, phase, attempt): true when the stored state is still (phase, attempt)
-- — the compare of every compare-and-set on a block, so a processor that acted on a stale read
-- (a second delivery of the same block job, a deposed leader) never overwrites a newer state.
local function block_state(key, block)
  local raw = redis.call("HGET", key, block)
  if not raw then
    return nil, nil
  end
  local ok, st = pcall(cjson.decode, raw)
  if not ok or type(st) ~= "table" then
    return nil, raw
  end
  return st, raw
end

local function block_state_is(key, block, phase, attempt)
  local st, raw = block_state(key, block)
  if st == nil then
    return false, raw or ""
  end
  return st.phase == phase and tonumber(st.attempt) == tonumber(attempt), raw
end

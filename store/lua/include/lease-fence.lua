-- lease_fence(first, epoch): the fence of every write of a block attempt's results. KEYS[first..]
-- are the gang's lease keys; nil when each still holds `epoch`, else the 1-based position (from
-- `first`) of the first that does not and the epoch it holds ('' when gone), so a revoked or
-- expired attempt's write is refused whoever runs it.
local function lease_fence(first, epoch)
  for i = first, #KEYS do
    local e = redis.call("HGET", KEYS[i], "epoch")
    if e ~= epoch then
      return i - first + 1, e or ""
    end
  end
  return nil
end

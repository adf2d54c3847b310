-- recorded_attempt(raw): the attempt of a failed-hash record (JSON { reason, attempt }), or nil
-- when there is none or it cannot be read.
local function recorded_attempt(raw)
  if not raw then
    return nil
  end
  local ok, rec = pcall(cjson.decode, raw)
  if not ok or type(rec) ~= "table" then
    return nil
  end
  return tonumber(rec.attempt)
end

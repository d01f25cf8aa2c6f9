-- BODIES names the signed bodies, one per line (sign_notifications.py, sign_realtime.py).
-- Thread k of 2 posts lines k, k+2, k+4, … of the signed bodies: every request a new one.
-- DELAY_MS, when set, waits that long on each connection before each request (a fixed rate:
-- connections × 1000 / DELAY_MS requests a second at most).
local bodies = {}
for line in io.lines(os.getenv("BODIES")) do bodies[#bodies + 1] = line end
local threads = 0
function setup(thread) thread:set("id", threads); threads = threads + 1 end
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
-- OFFSET, when set, starts at that body (a later run posting bodies an earlier one did not).
local n = math.floor(tonumber(os.getenv("OFFSET") or "0") / 2)
function request()
  local i = (n * 2 + id) % #bodies + 1
  n = n + 1
  return wrk.format(nil, nil, nil, bodies[i])
end

local pause = tonumber(os.getenv("DELAY_MS") or "0")
if pause > 0 then
  function delay() return pause end
end

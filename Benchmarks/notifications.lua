-- BODIES names the signed bodies, one per line (sign_notifications.py).
-- Thread k of 2 posts lines k, k+2, k+4, … of the signed bodies: every request a new notification.
local bodies = {}
for line in io.lines(os.getenv("BODIES")) do bodies[#bodies + 1] = line end
local threads = 0
function setup(thread) thread:set("id", threads); threads = threads + 1 end
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local n = 0
function request()
  local i = (n * 2 + id) % #bodies + 1
  n = n + 1
  return wrk.format(nil, nil, nil, bodies[i])
end

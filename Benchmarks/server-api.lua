-- Each request: one of the purchases in purchases.txt (a transaction id and its PKCS#7 receipt per
-- line), posted by a user of its own; BODY=transaction_id or receipt_data chooses what is sent.
local lines = {}
for line in io.lines(os.getenv("PURCHASES")) do lines[#lines + 1] = line end
local field = os.getenv("BODY")
local threads, n = 0, 0
function setup(thread) thread:set("id", threads); threads = threads + 1 end
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer bench-public"
function request()
  n = n + 1
  local k = (n * 2 + id) % #lines + 1
  local id_, receipt = lines[k]:match("^(%S+) (%S+)$")
  local value = field == "transaction_id" and id_ or receipt
  local body = string.format('{"app_user_id":"%s-t%du%d","%s":"%s"}', field, id, n, field, value)
  return wrk.format(nil, nil, nil, body)
end

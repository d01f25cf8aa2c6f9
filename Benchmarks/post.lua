-- Each request: one of 10,000 users (5,000 per thread) posting one of 14 scripted receipts of its own.
-- With UNIQUE_USERS=<tag> in the environment, every request is a user never seen before (<tag>-t<thread>u<n>),
-- so every answer stores new events (Benchmarks/webhooks.sh). With SDK_KEY=<key>, the request is RevenueCat's
-- SDK's (`fetch_token`, that key) for the SDK listener (Benchmarks/sdk.sh).
local scenarios = { "active_monthly", "trial", "cancelled", "billing_retry", "grace_period", "expired_voluntary",
  "refunded", "past_refund", "upgraded", "family_shared", "non_consumable", "non_renewing", "offer_code",
  "downgrade_pending" }
local alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
local function base64(s)
  return ((s:gsub(".", function(x)
    local r, b = "", x:byte()
    for i = 8, 1, -1 do r = r .. (b % 2 ^ i - b % 2 ^ (i - 1) > 0 and "1" or "0") end
    return r
  end) .. "0000"):gsub("%d%d%d?%d?%d?%d?", function(x)
    if #x < 6 then return "" end
    local c = 0
    for i = 1, 6 do c = c + (x:sub(i, i) == "1" and 2 ^ (6 - i) or 0) end
    return alphabet:sub(c + 1, c + 1)
  end) .. ({ "", "==", "=" })[#s % 3 + 1])
end
local unique = os.getenv("UNIQUE_USERS")
local threads, n = 0, 0
function setup(thread) thread:set("id", threads); threads = threads + 1 end
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local sdk = os.getenv("SDK_KEY")
wrk.headers["Authorization"] = "Bearer " .. (sdk or "bench-public")
function request()
  n = n + 1
  local user = unique and string.format("%s-t%du%d", unique, id, n) or string.format("t%du%d", id, n % 5000)
  local scenario = scenarios[(n % 5000) % #scenarios + 1]
  local body = string.format(sdk and '{"app_user_id":"%s","fetch_token":"%s","is_restore":false}'
    or '{"app_user_id":"%s","receipt_data":"%s"}', user, base64(scenario .. ":" .. user))
  return wrk.format(nil, nil, nil, body)
end

-- wrk script of the http family (bench/http_bench.cc): every request is a
-- POST /rides with a valid ride body and an Idempotency-Key no request has
-- used before, for one of the service's demo users (tok_user_1..100) whose
-- card is accepted (user 13's card is declined: 402, by design).
--   wrk -s bench/http/fresh_key.lua http://127.0.0.1:PORT -- PREFIX
-- PREFIX must differ between runs against the same database. done() prints
-- one line "WRK_JSON {...}" with the figures bench_http reads.
local threads = {}
local thread_count = 0

function setup(thread)
  thread:set("tid", thread_count)
  thread_count = thread_count + 1
  table.insert(threads, thread)
end

local body = '{"origin_lat": 52.52, "origin_lon": 13.40, "target_lat": 48.85, "target_lon": 2.35}'
local prefix = "k-"
local seq = 0
non201 = 0

function init(args)
  prefix = (args[1] or "run") .. "-" .. tid .. "-"
end

function request()
  seq = seq + 1
  local user = (seq % 99) + 1
  if user >= 13 then user = user + 1 end
  return wrk.format("POST", "/rides", {
    ["Authorization"] = "Bearer tok_user_" .. user,
    ["Content-Type"] = "application/json",
    ["Idempotency-Key"] = prefix .. seq,
  }, body)
end

function response(status, headers, response_body)
  if status ~= 201 then non201 = non201 + 1 end
end

function done(summary, latency, requests)
  local bad = 0
  for _, t in ipairs(threads) do bad = bad + (t:get("non201") or 0) end
  local e = summary.errors
  io.write(string.format(
    'WRK_JSON {"requests": %d, "duration_us": %d, "non201": %d, "socket_errors": %d, ' ..
    '"p50_us": %.1f, "p90_us": %.1f, "p99_us": %.1f, "max_us": %.1f, "mean_us": %.1f}\n',
    summary.requests, summary.duration, bad, e.connect + e.read + e.write + e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max, latency.mean))
end

-- mix.lua: the wrk script of bench/load. Each request is drawn from a weighted
-- mix of endpoints; its kind travels in X-Request-Id (framed echoes a sane
-- client ID), so response() knows what was asked even though a thread's
-- connections answer out of order. A response other than the expected one
-- (2xx, or the 404 problem for the 404 kind; a query that did not succeed)
-- counts as an error. done() prints one "LOADJSON {...}" line for load.mjs.
-- Arguments (after --): a finished query's ID, the dataset name.

local kinds = {
  { name = "livez", weight = 20 },
  { name = "config", weight = 10 },
  { name = "datasets", weight = 10 },
  { name = "query", weight = 20 },
  { name = "result", weight = 20 },
  { name = "metrics", weight = 10 },
  { name = "notfound", weight = 10 },
}
local formats = { "json", "csv", "ndjson" }

local threads = {}
local draw = {}
local seq = 0
local last_query = nil
local dataset = "events"
local plan_body = nil

-- Counters are flat globals (sent_<kind>, ok_<kind>, bad_<kind>) because
-- thread:get() copies numbers and strings, not nested tables; bad_examples
-- keeps the start of a few bad answers.
bad_examples = ""

local function bump(what, kind)
  local name = what .. "_" .. kind
  _G[name] = (_G[name] or 0) + 1
end

function setup(thread)
  thread:set("tid", #threads + 1)
  table.insert(threads, thread)
end

function init(args)
  last_query = args[1]
  dataset = args[2] or dataset
  math.randomseed(os.time() * 1000 + tid)
  for i, k in ipairs(kinds) do
    for _ = 1, k.weight do table.insert(draw, i) end
  end
  plan_body = '{"plan":{"source":{"dataset":"' .. dataset .. '"},"ops":[' ..
    '{"where":"v1 > 100"},' ..
    '{"groupby":["key"],"agg":["count(*) as n","sum(v1) as s","avg(v2) as a"]},' ..
    '{"sort":["s desc","key"]},{"limit":10}]}}'
end

function request()
  seq = seq + 1
  local kind = kinds[draw[math.random(#draw)]].name
  bump("sent", kind)
  local headers = { ["X-Request-Id"] = kind .. "-" .. tid .. "-" .. seq }
  if kind == "livez" then
    return wrk.format("GET", "/livez", headers)
  elseif kind == "config" then
    return wrk.format("GET", "/v1/config", headers)
  elseif kind == "datasets" then
    return wrk.format("GET", "/v1/datasets", headers)
  elseif kind == "query" then
    headers["Content-Type"] = "application/json"
    return wrk.format("POST", "/v1/queries?wait=30", headers, plan_body)
  elseif kind == "result" then
    local f = formats[seq % #formats + 1]
    return wrk.format("GET", "/v1/queries/" .. last_query .. "/result?format=" .. f, headers)
  elseif kind == "metrics" then
    return wrk.format("GET", "/metrics", headers)
  end
  if seq % 2 == 0 then
    return wrk.format("GET", "/v1/datasets/no_such_dataset", headers)
  end
  return wrk.format("GET", "/v1/queries/q-0000000000000000", headers)
end

local function header(headers, name)
  local v = headers[name]
  if v then return v end
  local lower = string.lower(name)
  for k, val in pairs(headers) do
    if string.lower(k) == lower then return val end
  end
  return nil
end

local function is_bad(kind, status, headers, body)
  if kind == "notfound" then
    return status ~= 404 or not string.find(header(headers, "Content-Type") or "", "problem+json", 1, true)
  end
  if status < 200 or status > 299 then return true end
  if kind == "query" then
    if not string.find(body, '"state":"succeeded"', 1, true) then return true end
    -- Later result fetches use a recent query: old records are evicted beyond 512.
    last_query = string.match(body, '"id":"(q%-[0-9a-f]+)"') or last_query
  end
  return false
end

function response(status, headers, body)
  local rid = header(headers, "X-Request-Id") or ""
  local kind = string.match(rid, "^(%a+)%-")
  if not (kind and _G["sent_" .. kind]) then
    -- An answer without our ID cannot be matched to what was asked: an error.
    bump("bad", "unmatched")
    return
  end
  if is_bad(kind, status, headers, body) then
    bump("bad", kind)
    if #bad_examples < 600 then
      bad_examples = bad_examples .. kind .. " " .. status .. " " .. string.sub(body or "", 1, 120) .. " | "
    end
  else
    bump("ok", kind)
  end
end

local function json_string(s)
  return '"' .. string.gsub(s, '[%c"\\]', function(ch)
    return string.format("\\u%04x", string.byte(ch))
  end) .. '"'
end

function done(summary, latency, requests)
  local total = {}
  local examples = ""
  local names = { "unmatched" }
  for _, k in ipairs(kinds) do table.insert(names, k.name) end
  for _, t in ipairs(threads) do
    for _, name in ipairs(names) do
      local a = total[name] or { sent = 0, ok = 0, bad = 0 }
      a.sent = a.sent + (t:get("sent_" .. name) or 0)
      a.ok = a.ok + (t:get("ok_" .. name) or 0)
      a.bad = a.bad + (t:get("bad_" .. name) or 0)
      total[name] = a
    end
    examples = examples .. (t:get("bad_examples") or "")
  end
  local parts = {}
  for _, name in ipairs(names) do
    local a = total[name]
    table.insert(parts, string.format('"%s":{"sent":%d,"ok":%d,"bad":%d}', name, a.sent, a.ok, a.bad))
  end
  local e = summary.errors
  io.write(string.format(
    'LOADJSON {"duration_us":%d,"requests":%d,"bytes":%d,' ..
    '"socket_errors":{"connect":%d,"read":%d,"write":%d,"timeout":%d},"non_2xx_3xx":%d,' ..
    '"latency_us":{"mean":%.1f,"stdev":%.1f,"max":%d,"p50":%d,"p90":%d,"p99":%d,"p999":%d},' ..
    '"kinds":{%s},"bad_examples":%s}\n',
    summary.duration, summary.requests, summary.bytes,
    e.connect, e.read, e.write, e.timeout, e.status,
    latency.mean, latency.stdev, latency.max,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency:percentile(99.9),
    table.concat(parts, ","), json_string(examples)))
end

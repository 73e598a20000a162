-- wrk driver for authenticated reads (loadtests/run): each connection takes the next token of
-- TOKENS (comma separated), so requests count against many callers as real traffic does.
--
--   PATHS  '|'-separated paths to cycle through (default: the path given on the command line);
--          several paths with different queries make requests the read cache has not seen.
local tokens = {}
for token in string.gmatch(os.getenv("TOKENS") or "", "[^,]+") do
  table.insert(tokens, token)
end
local paths = {}
for path in string.gmatch(os.getenv("PATHS") or "", "[^|]+") do
  table.insert(paths, path)
end

local counter = 0
local thread_id = 0

function setup(thread)
  thread:set("thread_id", thread_id)
  thread_id = thread_id + 1
end

function init(args)
  counter = thread_id * 7919
end

function request()
  counter = counter + 1
  local headers = {}
  if #tokens > 0 then
    headers["Authorization"] = "Bearer " .. tokens[(counter % #tokens) + 1]
  end
  local path = wrk.path
  if #paths > 0 then
    path = paths[(counter % #paths) + 1]
  end
  return wrk.format("GET", path, headers)
end

function done(summary, latency, requests)
  local errors = summary.errors.status + summary.errors.connect + summary.errors.read
    + summary.errors.write + summary.errors.timeout
  io.write(string.format("WRK %d %.1f %.3f %.3f %d\n",
    summary.requests, summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, errors))
end

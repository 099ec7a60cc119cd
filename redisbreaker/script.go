package redisbreaker

import "github.com/redis/go-redis/v9"

// exchangeSource is the script of a round, run once per breaker, on the
// breaker's key alone (so it runs on any node of a cluster). The key is a
// hash; its fields:
//
//	"=3 <id>"  a process's history, layout v3: when it was published, in
//	           Unix ms, in decimal, a space, then the history in the binary
//	           form of package fleet (fleet.History.MarshalBinary)
//	"<id>"     a process's counts, layout v2, as redisbreaker before v3
//	           publishes them (see encodeV2); a v3 process writes it too
//	           while WithV2 is on, for v2 readers
//	"=sum"     the v2 counts added up, for v2 readers ("=swept": when)
//
// v2 readers (redisbreaker before histories) skip every field that starts
// with "=": they never see a v3 field, and read the v2 ones as before.
//
//	KEYS[1]  the breaker's hash
//	ARGV[1]  this process's ID         ARGV[2]  its v3 value
//	ARGV[3]  its v2 value, or ""       ARGV[4]  now, Unix ms
//	ARGV[5]  the breaker's window, ms  ARGV[6]  the key's TTL, ms
//
// It writes this process's fields, then reads the whole hash: it deletes
// the fields published more than a window ago (or further ahead, for
// clocks apart), whose processes stopped or lost Redis, and returns the
// other processes' fresh fields, as triples: the layout ("3" or "2"), the
// process's ID and its value, v2 values only of processes without a v3
// one (a v3 process publishing both is read once). Last comes how many
// values it could not parse, which it leaves alone. It rewrites "=sum" and
// "=swept" from the fresh v2 fields, so that v2 readers keep an exact sum
// (or deletes them once there are none), and renews the key's TTL.
//
// Reading the whole hash costs Redis N fields per round for N processes;
// v2 read it once a quarter window, and kept a running sum in between,
// which a history cannot be without parsing its binary form in Lua.
const exchangeSource = `
local key, id, v3, v2 = KEYS[1], ARGV[1], ARGV[2], ARGV[3]
local now, window = tonumber(ARGV[4]), tonumber(ARGV[5])
local cap = 1125899906842624
local counts = 10 -- per v2 process: see encodeV2

-- parse2 returns the time and the counts of a v2 value ("2 <ms>" and the
-- counts); nil if v is not that.
local function parse2(v)
  local n = {}
  for token in string.gmatch(v, '%S+') do
    if #n == counts + 2 then return nil end
    local x = tonumber(token)
    if x == nil or x ~= x or x ~= math.floor(x) then return nil end
    n[#n + 1] = x
  end
  if #n ~= counts + 2 or n[1] ~= 2 then return nil end
  local c = {}
  for j = 3, counts + 2 do
    if n[j] < 0 or n[j] > cap * 4 then return nil end
    c[#c + 1] = n[j]
  end
  return n[2], c
end

local function stale(t)
  return now - t > window or t - now > window
end

redis.call('HSET', key, '=3 ' .. id, string.format('%.0f', now) .. ' ' .. v3)
if v2 ~= '' then redis.call('HSET', key, id, v2) end

local out, v2s, has3 = {}, {}, {}
local sum, any2, bad = {}, false, 0
for j = 1, counts do sum[j] = 0 end
local all = redis.call('HGETALL', key)
for i = 1, #all, 2 do
  local field, value = all[i], all[i + 1]
  if string.sub(field, 1, 3) == '=3 ' then
    local space = string.find(value, ' ', 1, true)
    local t = space and tonumber(string.sub(value, 1, space - 1))
    if not t then
      bad = bad + 1
    elseif stale(t) then
      redis.call('HDEL', key, field)
    else
      local pid = string.sub(field, 4)
      has3[pid] = true
      if pid ~= id then
        out[#out + 1] = '3'
        out[#out + 1] = pid
        out[#out + 1] = string.sub(value, space + 1)
      end
    end
  elseif string.sub(field, 1, 1) ~= '=' then
    local t, c = parse2(value)
    if not t then
      bad = bad + 1
    elseif stale(t) then
      redis.call('HDEL', key, field)
    else
      any2 = true
      for j = 1, counts do sum[j] = math.min(sum[j] + c[j], cap * 4) end
      v2s[#v2s + 1] = field
      v2s[#v2s + 1] = value
    end
  end
end
for i = 1, #v2s, 2 do
  if not has3[v2s[i]] and v2s[i] ~= id then
    out[#out + 1] = '2'
    out[#out + 1] = v2s[i]
    out[#out + 1] = v2s[i + 1]
  end
end
if any2 then
  local s = {}
  for j = 1, counts do s[j] = string.format('%.0f', sum[j]) end
  redis.call('HSET', key, '=sum', table.concat(s, ' '), '=swept', string.format('%.0f', now))
else
  redis.call('HDEL', key, '=sum', '=swept')
end
redis.call('PEXPIRE', key, ARGV[6])
out[#out + 1] = bad
return out
`

// exchangeScript holds the SHA1 of exchangeSource, for EVALSHA.
var exchangeScript = redis.NewScript(exchangeSource)

/**
 * The Lua scripts of the Redis limiter store (DESIGN §8): each state change is one script, so it is
 * atomic across every process that shares the keys. Keys, in order: the state hash, the in-flight
 * leases (a sorted set of lease ids by expiry), the stream of answers the send rate learns from.
 * Times are milliseconds since the epoch, passed in by the caller (the processes' clocks must agree).
 *
 * The state hash: `seq` (sends granted), `remaining` and `remainingSeq` (the count in force and the
 * send that brought it), `periodHigh` (the highest count since the last refill), `periodSeq` (the
 * last send whose count was the first or rose), `quotaUntil`,
 * `probing` (the lease of the one send let go after the quota ran out), `pauseUntil`,
 * `breakerUntil` (a process's circuit breaker is open), `tat` (the shared pace's theoretical
 * arrival time, GCRA), `grantedAt` (when the last send was granted), `rate`, `rateAt` and `rateBy`
 * (the fleet's pace, when and by which process it was last set), `halt` and `haltUntil` (why every
 * send fails, as JSON, and until when).
 */

/** New answers since the caller's last one (`ARGV[last]`, an exclusive stream id), at most 1,000. */
const NEWS = (last: number) => `local news = redis.call('XRANGE', KEYS[3], '(' .. ARGV[${last}], '+', 'COUNT', 1000)`;

/** How long, in milliseconds, the fleet's pace holds without the process that set it asking again. */
const RATE_HOLDS_MS = 1_000;

/**
 * Takes a send slot. ARGV: now, lease id, lease expiry, rate (sends per second, 0 for unlimited),
 * TTL of the keys, last answer id seen, the asking process's id. Returns `{kind, value, news}`:
 * `ok` with the send's seq (and `probe` in place of `ok` for the one send after the quota ran out)
 * and, fourth, when the fleet's send before it was granted ('' if none); or a refusal (`halt` with
 * its JSON, `pause`, `breaker`, `quota` or `rate` with the time to ask again, -1 for "after a send
 * finishes").
 *
 * Every send is paced at the fleet's rate: the lowest a process asked at lately, so that a process
 * whose learner knows less (one just started, or one set up otherwise) keeps the fleet's pace
 * rather than sending past it. The process that set it moves it, up or down; another lowers it,
 * or sets it once it is `RATE_HOLDS_MS` old (its process stopped asking). 0 is unlimited.
 */
export const ACQUIRE = `
${NEWS(6)}
local now = tonumber(ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
local f = redis.call('HMGET', KEYS[1], 'halt', 'pauseUntil', 'remaining', 'quotaUntil', 'probing', 'tat', 'breakerUntil', 'haltUntil', 'rate', 'rateAt', 'rateBy', 'grantedAt')
if f[1] and now < (tonumber(f[8]) or 0) then return {'halt', f[1], news} end
local pauseUntil = tonumber(f[2]) or 0
if now < pauseUntil then return {'pause', pauseUntil, news} end
local breakerUntil = tonumber(f[7]) or 0
if now < breakerUntil then return {'breaker', breakerUntil, news} end
local inFlight = redis.call('ZCARD', KEYS[2])
local kind = 'ok'
if f[3] and tonumber(f[3]) - inFlight <= 0 then
  if inFlight > 0 or (f[5] and redis.call('ZSCORE', KEYS[2], f[5])) then return {'quota', -1, news} end
  local quotaUntil = tonumber(f[4]) or 0
  if now < quotaUntil then return {'quota', quotaUntil, news} end
  kind = 'probe'
end
local asked = tonumber(ARGV[4])
local rate = tonumber(f[9]) or 0
local sets = f[11] == ARGV[7] or now - (tonumber(f[10]) or 0) >= ${RATE_HOLDS_MS}
if sets or (asked > 0 and (rate == 0 or asked < rate)) then
  rate = asked
  redis.call('HSET', KEYS[1], 'rate', string.format('%.17g', rate), 'rateAt', now, 'rateBy', ARGV[7])
end
local tat = tonumber(f[6]) or 0
if rate > 0 then
  -- GCRA: at most 20 ms worth of sends at once, at least one.
  local interval = 1000 / rate
  local tolerance = math.max(0, 20 - interval)
  if tat < now then tat = now end
  if tat - now > tolerance then return {'rate', math.ceil(tat - tolerance), news} end
  tat = tat + interval
end
local seq = redis.call('HINCRBY', KEYS[1], 'seq', 1)
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[2])
redis.call('HSET', KEYS[1], 'tat', string.format('%.17g', tat), 'grantedAt', now)
if kind == 'probe' then redis.call('HSET', KEYS[1], 'probing', ARGV[2]) end
redis.call('PEXPIRE', KEYS[1], ARGV[5])
redis.call('PEXPIRE', KEYS[2], ARGV[5])
return {kind, seq, news, f[12] or ''}
`;

/**
 * Gives a slot back with what its response said (DESIGN §3: an old response never refills, an old
 * 429 never overrides a newer refill; sends of many processes reach the service in another order
 * than their seq, so an old render counts against the count in force, an old count of the same
 * period that is lower is taken, and a newer count that is higher, but not higher than any since
 * the last refill, is a stale one). ARGV: now, lease id, seq, probe (1/0), effect, remaining
 * ('' if none), retryAt ('' if none), sentAt, resend (1/0), TTL, last answer id seen. An accepted
 * send or a `rate_limited` goes into the answers stream, for every process's send rate to learn
 * from. Returns `{quotaExhausted (1/0), remaining ('' if unknown), in flight, news}`.
 */
export const RELEASE = `
${NEWS(11)}
local now = tonumber(ARGV[1])
local seq = tonumber(ARGV[3])
local effect = ARGV[5]
redis.call('ZREM', KEYS[2], ARGV[2])
if ARGV[4] == '1' and redis.call('HGET', KEYS[1], 'probing') == ARGV[2] then redis.call('HDEL', KEYS[1], 'probing') end
-- A send granted before Redis lost its state (a restart, a flush) tells the new state nothing.
if seq > (tonumber(redis.call('HGET', KEYS[1], 'seq')) or 0) then return {0, '', redis.call('ZCARD', KEYS[2]), news} end
local f = redis.call('HMGET', KEYS[1], 'remaining', 'remainingSeq', 'periodSeq')
local remaining = f[1]
local remainingSeq = tonumber(f[2]) or 0
local periodSeq = tonumber(f[3]) or 0
local exhausted = 0
-- A count from a send granted later but rendered sooner (another process sent it faster) may be
-- higher than the one in force, yet no higher than the highest since the last refill: a count is
-- taken when it is lower, when it is a probe's (alone in flight: the service's count now), or when
-- it is higher than any since the last refill (a refill).
local count = tonumber(ARGV[6])
local current = tonumber(remaining)
local high = tonumber(redis.call('HGET', KEYS[1], 'periodHigh'))
local refill = count and (current == nil or high == nil or ARGV[4] == '1' or count > high)
if count and seq > remainingSeq and (refill or count <= current) then
  if refill then redis.call('HSET', KEYS[1], 'periodHigh', count) end
  -- The first count, or one that rose: one from a send granted before it may be the last period's.
  if current == nil or count > current then redis.call('HSET', KEYS[1], 'periodSeq', seq) end
  remaining = ARGV[6]
  remainingSeq = seq
  local quotaUntil = 0
  if tonumber(remaining) == 0 then quotaUntil = (ARGV[7] ~= '' and ARGV[7]) or ARGV[1] end
  redis.call('HSET', KEYS[1], 'remaining', remaining, 'remainingSeq', seq, 'quotaUntil', quotaUntil)
end
if effect == 'accepted' then
  if ARGV[6] == '' and remaining and seq > remainingSeq then
    -- A probe that rendered with no count: renders are back, how many is unknown.
    if ARGV[4] == '1' then
      redis.call('HDEL', KEYS[1], 'remaining')
      remaining = false
    else
      remaining = tostring(math.max(0, tonumber(remaining) - 1))
      redis.call('HSET', KEYS[1], 'remaining', remaining)
    end
  elseif remaining and seq < remainingSeq and tonumber(remaining) > 0 then
    -- Sends of many processes reach the service in another order than their seq: this one may
    -- have rendered after the send whose count is in force, which then did not count it. And
    -- within a period the count only falls: a lower one, from a send granted after the period's
    -- refill, is the service's newer word.
    local less = tonumber(remaining) - 1
    if count and seq > periodSeq and count < less then less = count end
    remaining = tostring(less)
    redis.call('HSET', KEYS[1], 'remaining', remaining)
    if less == 0 then redis.call('HSET', KEYS[1], 'quotaUntil', (ARGV[7] ~= '' and ARGV[7]) or ARGV[1]) end
  end
elseif effect == 'quota_out' and (seq >= remainingSeq or seq > periodSeq) then
  remaining = '0'
  redis.call('HSET', KEYS[1], 'remaining', 0, 'remainingSeq', math.max(remainingSeq, seq), 'quotaUntil', (ARGV[7] ~= '' and ARGV[7]) or ARGV[1])
  exhausted = 1
end
if effect == 'accepted' or effect == 'slow_down' then
  local limited = (effect == 'slow_down' and '1') or '0'
  redis.call('XADD', KEYS[3], 'MAXLEN', '~', 5000, '*', 't', ARGV[1], 's', ARGV[8], 'l', limited, 'r', ARGV[9], 'a', ARGV[7])
  redis.call('PEXPIRE', KEYS[3], ARGV[10])
end
redis.call('PEXPIRE', KEYS[1], ARGV[10])
return {exhausted, remaining or '', redis.call('ZCARD', KEYS[2]), news}
`;

/**
 * Every send waits until a time, unless a later wait of the same kind is in force. ARGV: the field
 * (`pauseUntil`, or `breakerUntil` for a process's open circuit breaker), the time, TTL.
 */
export const HOLD = `
local at = tonumber(ARGV[2])
if at > (tonumber(redis.call('HGET', KEYS[1], ARGV[1])) or 0) then
  redis.call('HSET', KEYS[1], ARGV[1], at)
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
end
return 1
`;

/**
 * Every send fails until a time: the key is unusable. ARGV: why (JSON), until, now, TTL. A halt in
 * force stays; after its time sends go again (a key topped up or replaced meanwhile works).
 */
export const HALT = `
if (tonumber(redis.call('HGET', KEYS[1], 'haltUntil')) or 0) <= tonumber(ARGV[3]) then
  redis.call('HSET', KEYS[1], 'halt', ARGV[1], 'haltUntil', ARGV[2])
end
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1
`;

/** Gives back leases at once, and the probe if one of them is it. ARGV: the lease ids. */
export const DROP = `
local probing = redis.call('HGET', KEYS[1], 'probing')
for i = 1, #ARGV do
  redis.call('ZREM', KEYS[2], ARGV[i])
  if probing == ARGV[i] then redis.call('HDEL', KEYS[1], 'probing') end
end
return 1
`;

/** Extends the leases of sends still in flight. ARGV: expiry, then the lease ids. */
export const RENEW = `
for i = 2, #ARGV do redis.call('ZADD', KEYS[2], 'XX', ARGV[1], ARGV[i]) end
return 1
`;

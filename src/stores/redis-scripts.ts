import { BURST_MS } from "../policies/limiter/gcra.js";

/**
 * The Lua scripts of the Redis limiter store (DESIGN §8): primitives only, each one atomic across
 * every process that shares the keys. No quota or learner rule lives here: those are the pure
 * TypeScript of limiter-state.ts, which every process runs on the record it reads from here.
 *
 * Keys: the state hash, then the leases (a sorted set of the sends in flight, lease id by expiry).
 * The state hash: `version` (bumped by each write of `record`), `record` (the LimiterRecord as
 * JSON), `seq` (sends granted), `countSeq` (the record's own, which SETTLE stamps with `seq` as it
 * writes a record that took a new count: see below), `tat` (the shared pace's theoretical arrival
 * time, GCRA), `halt`/`haltUntil` (why every send fails, as JSON, and until when), `breakerUntil`.
 *
 * Every script drops the leases expired at the caller's `now` first (a killed process's sends stop
 * counting as in flight), and every version a reply gives is that of the record it gives (or that
 * the caller holds), with the in-flight count of the same moment. A state made anew (never written,
 * or lost to a restart or a flush) starts at the caller's `birth` version, a random number: a
 * process still holding a version of the lost state never finds it matching.
 */
const PRELUDE = `
local now = tonumber(ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
`;

/** The state's version, set to `birth` (ARGV[at]) if the state is new (which then lives a TTL, ARGV[at + 1]). */
const VERSION = (at: number) => `
if redis.call('HSETNX', KEYS[1], 'version', ARGV[${at}]) == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[${at + 1}]) end
local version = tonumber(redis.call('HGET', KEYS[1], 'version'))
`;

const EXPIRE = (at: number) => `
redis.call('PEXPIRE', KEYS[1], ARGV[${at}])
redis.call('PEXPIRE', KEYS[2], ARGV[${at}])
`;

/**
 * The state as it is. ARGV: now, birth, TTL. Returns `{version, record ('' if none), in flight, seq,
 * countSeq}`.
 */
export const READ = `${PRELUDE}${VERSION(2)}
local f = redis.call('HMGET', KEYS[1], 'record', 'seq', 'countSeq')
return {version, f[1] or '', redis.call('ZCARD', KEYS[2]), tonumber(f[2]) or 0, tonumber(f[3]) or 0}
`;

/** The reply that tells a caller the record changed: `{'conflict', version, record, in flight, seq, countSeq}`. */
const CONFLICT = (inFlight: string) => `
  local g = redis.call('HMGET', KEYS[1], 'record', 'seq', 'countSeq')
  return {'conflict', version, g[1] or '', ${inFlight}, tonumber(g[2]) or 0, tonumber(g[3]) or 0}
`;

/**
 * Takes a send slot. ARGV: now, lease id, lease expiry, expected version, most sends in flight,
 * rate (sends per second, 0 for unlimited), a new record to write ('' for none), birth, TTL.
 * Returns one of:
 * - `{'halt', why}`, `{'breaker', until}`: every send waits or fails, whatever the record says;
 * - `{'conflict', version, record, in flight, seq, countSeq}`: the record changed since the caller read it;
 * - `{'full', in flight}`: as many sends are in flight as the caller allows;
 * - `{'wait', ms, in flight}`: the pace (GCRA, as gcra.ts: ${BURST_MS} ms worth at once, one at least);
 * - `{'ok', seq, version, in flight}`: granted, the lease taken, the new record (if any) written.
 */
export const TAKE = `${PRELUDE}${VERSION(8)}
local f = redis.call('HMGET', KEYS[1], 'halt', 'haltUntil', 'breakerUntil', 'tat')
if f[1] and now < (tonumber(f[2]) or 0) then return {'halt', f[1]} end
local breakerUntil = tonumber(f[3]) or 0
if now < breakerUntil then return {'breaker', breakerUntil} end
local inFlight = redis.call('ZCARD', KEYS[2])
if version ~= tonumber(ARGV[4]) then${CONFLICT("inFlight")}end
if inFlight >= tonumber(ARGV[5]) then return {'full', inFlight} end
local rate = tonumber(ARGV[6])
local tat = now
if rate > 0 then
  local interval = 1000 / rate
  local tolerance = math.max(0, ${BURST_MS} - interval)
  local start = math.max(tonumber(f[4]) or 0, now)
  if start - now > tolerance then return {'wait', math.ceil(start - tolerance - now), inFlight} end
  tat = start + interval
end
local seq = redis.call('HINCRBY', KEYS[1], 'seq', 1)
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[2])
redis.call('HSET', KEYS[1], 'tat', string.format('%.17g', tat))
if ARGV[7] ~= '' then
  redis.call('HSET', KEYS[1], 'record', ARGV[7])
  version = redis.call('HINCRBY', KEYS[1], 'version', 1)
end
${EXPIRE(9)}
return {'ok', seq, version, inFlight + 1}
`;

/**
 * Gives a slot back and writes the record its answer made, compare-and-set. ARGV: now, lease id,
 * expected version, the new record, birth, TTL, stamp (1 when the record took a new count: its
 * `countSeq` becomes `seq` as it is written, as every send granted later was sent after the
 * answer came; the record's own `countSeq`, made from the `seq` its writer last read, may be
 * older; else 0). Returns `{'ok', version, in flight, countSeq}` (the lease dropped, the record
 * written), `{'conflict', version, record, in flight, seq, countSeq}` (nothing done: the caller
 * makes its record anew from this one), or `{'gone', in flight}` when the lease is not there
 * (expired, dropped, or the state lost since it was granted): the state no longer counts that
 * send, and is left as it is.
 */
export const SETTLE = `${PRELUDE}${VERSION(5)}
if not redis.call('ZSCORE', KEYS[2], ARGV[2]) then return {'gone', redis.call('ZCARD', KEYS[2])} end
if version ~= tonumber(ARGV[3]) then${CONFLICT("redis.call('ZCARD', KEYS[2])")}end
redis.call('ZREM', KEYS[2], ARGV[2])
redis.call('HSET', KEYS[1], 'record', ARGV[4])
if ARGV[7] == '1' then redis.call('HSET', KEYS[1], 'countSeq', redis.call('HGET', KEYS[1], 'seq') or 0) end
version = redis.call('HINCRBY', KEYS[1], 'version', 1)
${EXPIRE(6)}
return {'ok', version, redis.call('ZCARD', KEYS[2]), tonumber(redis.call('HGET', KEYS[1], 'countSeq')) or 0}
`;

/** A process's circuit breaker opened: every send waits until then, unless a later wait is in force. ARGV: now, until, TTL. */
export const HOLD = `${PRELUDE}
local at = tonumber(ARGV[2])
if at > (tonumber(redis.call('HGET', KEYS[1], 'breakerUntil')) or 0) then
  redis.call('HSET', KEYS[1], 'breakerUntil', at)
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
end
return 1
`;

/**
 * Every send fails until a time: the key is unusable. ARGV: now, why (JSON), until, TTL. A halt in
 * force stays; after its time sends go again (a key topped up or replaced meanwhile works).
 */
export const HALT = `${PRELUDE}
if (tonumber(redis.call('HGET', KEYS[1], 'haltUntil')) or 0) <= now then
  redis.call('HSET', KEYS[1], 'halt', ARGV[2], 'haltUntil', ARGV[3])
end
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1
`;

/** Extends the leases of sends still in flight. ARGV: now, expiry, then the lease ids. */
export const RENEW = `${PRELUDE}
for i = 3, #ARGV do redis.call('ZADD', KEYS[2], 'XX', ARGV[2], ARGV[i]) end
return 1
`;

/** Gives back leases at once, with no answer to record (a grant that came too late, or close()). ARGV: now, then the lease ids. */
export const DROP = `${PRELUDE}
for i = 2, #ARGV do redis.call('ZREM', KEYS[2], ARGV[i]) end
return 1
`;

package sharedstate

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Bucket is one rate limit held in Redis: n calls per period, with bursts
// of up to Burst calls. It behaves as the token bucket of
// golang.org/x/time/rate with the same rate and burst (the local limiter),
// computed as GCRA: one timestamp per key, the "theoretical arrival time"
// of the next call.
type Bucket struct {
	Key      string
	Interval time.Duration // period / n: the time one call's token takes to refill
	Burst    int
}

// gcra takes one call from every bucket in KEYS, or from none: a refused
// call takes no token, as with the local limiter. ARGV holds, per key, its
// interval and burst in microseconds and calls. The clock is Redis's
// (TIME), so that the replicas' clocks do not matter. It returns {1} when
// admitted, or {0, i, µs} when bucket i refused, with the time until a
// call would be admitted. Each key expires when its bucket is full again:
// a full bucket and no key are the same.
var gcra = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local tats = {}
for i, key in ipairs(KEYS) do
  local interval = tonumber(ARGV[2*i-1])
  local burst = tonumber(ARGV[2*i])
  local tat = now
  local v = redis.call('GET', key)
  if v then
    tat = math.max(tonumber(v), now)
  end
  local nxt = tat + interval
  local over = nxt - now - burst * interval
  if over > 0 then
    return {0, i, over}
  end
  tats[i] = nxt
end
for i, key in ipairs(KEYS) do
  redis.call('SET', key, string.format('%.0f', tats[i]), 'PX', math.floor((tats[i] - now) / 1000) + 1)
end
return {1}
`)

// Take takes one call from every bucket at once, in one round trip. When a
// bucket refuses, refused is its index in buckets and retry is how long
// until the call would be admitted. An error means Redis did not answer
// (see Observe): the caller applies its fail mode.
func (s *Store) Take(ctx context.Context, buckets ...Bucket) (refused int, retry time.Duration, err error) {
	keys := make([]string, len(buckets))
	args := make([]any, 0, 2*len(buckets))
	for i, b := range buckets {
		keys[i] = b.Key
		args = append(args, max(b.Interval.Microseconds(), 1), max(b.Burst, 1))
	}
	res, err := gcra.Run(ctx, s.client, keys, args...).Int64Slice()
	if err != nil {
		s.Observe(err)
		return -1, 0, err
	}
	switch {
	case len(res) == 1 && res[0] == 1:
		return -1, 0, nil
	case len(res) == 3 && res[0] == 0:
		return int(res[1]) - 1, time.Duration(res[2]) * time.Microsecond, nil
	}
	return -1, 0, fmt.Errorf("rate limit script: unexpected answer %v", res)
}

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

// gcra takes calls from buckets: one call per request of a batch, each
// request from all its buckets or from none (a refused call takes no
// token, as with the local limiter). ARGV[1] is the number of requests;
// then, per request, its number of buckets and, per bucket, its interval
// and burst in microseconds and calls and the most tokens the replica
// would reserve (see reserves); KEYS are the requests' buckets in the same
// order. The requests are decided in order, each seeing what the earlier
// ones took, as if each had run alone. The clock is Redis's (TIME), so
// that the replicas' clocks do not matter. It returns, per request, three
// numbers and one per bucket: 1, 0, 0 when admitted, or 0, i, µs when its
// bucket i refused, with the time until the call would be admitted; then
// the tokens reserved from each bucket for the replica (0 when refused).
// Each key expires when its bucket is full again: a full bucket and no key
// are the same.
//
// A reservation is granted only from a bucket that holds at least
// reserveFloor tokens after the call, and takes at most a quarter of them:
// near a limit every call is decided here, one by one.
//
// One script run per batch, not per request: under load the batcher (see
// Take) sends many requests at once, and one command costs one reply to
// parse here and one script call in Redis, whatever the batch's size.
var gcra = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local floor = tonumber(ARGV[2])
local tat, dirty = {}, {}
local out = {}
local k, a = 1, 3
for r = 1, tonumber(ARGV[1]) do
  local n = tonumber(ARGV[a])
  a = a + 1
  local nxts = {}
  local refused = nil
  for i = 1, n do
    local key = KEYS[k + i - 1]
    local interval = tonumber(ARGV[a + 3*i - 3])
    local burst = tonumber(ARGV[a + 3*i - 2])
    local cur = tat[key]
    if cur == nil then
      local v = redis.call('GET', key)
      cur = v and tonumber(v) or now
      tat[key] = cur
    end
    local nxt = math.max(cur, now) + interval
    local over = nxt - now - burst * interval
    if over > 0 then
      refused = {0, i, over}
      break
    end
    nxts[i] = nxt
  end
  if refused then
    out[#out+1], out[#out+2], out[#out+3] = refused[1], refused[2], refused[3]
    for i = 1, n do
      out[#out+1] = 0
    end
  else
    out[#out+1], out[#out+2], out[#out+3] = 1, 0, 0
    for i = 1, n do
      local key = KEYS[k + i - 1]
      local interval = tonumber(ARGV[a + 3*i - 3])
      local burst = tonumber(ARGV[a + 3*i - 2])
      local want = tonumber(ARGV[a + 3*i - 1])
      local nxt = nxts[i]
      local left = math.floor((burst * interval - (nxt - now)) / interval)
      local got = 0
      if want > 0 and left >= floor then
        got = math.min(want, math.floor(left / 4))
        nxt = nxt + got * interval
      end
      tat[key] = nxt
      dirty[key] = true
      out[#out+1] = got
    end
  end
  k = k + n
  a = a + 3 * n
end
for key in pairs(dirty) do
  redis.call('SET', key, string.format('%.0f', tat[key]), 'PX', math.floor((tat[key] - now) / 1000) + 1)
end
return out
`)

// Take takes one call from every bucket at once. When a bucket refuses,
// refused is its index in buckets and retry is how long until the call
// would be admitted. An error means Redis did not answer (see Observe):
// the caller applies its fail mode.
//
// A call is admitted without a round trip when this replica holds tokens
// it reserved earlier from each of its buckets (see reserves); otherwise
// it costs one round trip, which may reserve tokens for the next calls.
//
// Takes of concurrent calls are batched: one goroutine sends whatever has
// queued while the previous batch was in flight as the next one, in one
// script run. Each call is still decided on its own, atomically, but under
// load many share one command, one write and one read, which is most of a
// round trip's CPU here (system calls, wake-ups and the client's encoding,
// not the arithmetic). A take whose ctx ends while it waits for its batch
// is not sent, so it takes no token.
func (s *Store) Take(ctx context.Context, buckets ...Bucket) (refused int, retry time.Duration, err error) {
	if s.res.take(buckets) {
		s.reserved.Add(1)
		return -1, 0, nil
	}
	s.checked.Add(1)
	req := s.newTake(ctx, buckets)
	r, err := enqueue(ctx, s, s.takes, req, req.done)
	if err != nil {
		return -1, 0, err
	}
	if r.admitted {
		return -1, 0, nil
	}
	return r.refused, r.retry, nil
}

// newTake makes the request of one call for the batcher.
func (s *Store) newTake(ctx context.Context, buckets []Bucket) *takeReq {
	req := &takeReq{ctx: ctx, buckets: buckets, keys: make([]string, len(buckets)), args: make([]any, 0, 3*len(buckets)), done: make(chan takeRes, 1)}
	for i, b := range buckets {
		req.keys[i] = b.Key
		req.args = append(req.args, max(b.Interval.Microseconds(), 1), max(b.Burst, 1), s.res.want(b.Key))
	}
	return req
}

type takeReq struct {
	ctx     context.Context // the caller's: a take cancelled before it is sent is dropped
	buckets []Bucket
	keys    []string
	args    []any
	done    chan takeRes // buffered: the batcher never waits for a caller
}

func (r *takeReq) caller() context.Context { return r.ctx }
func (r *takeReq) fail(err error)          { r.done <- takeRes{err: err} }

type takeRes struct {
	admitted bool
	refused  int           // the refusing bucket's index, when not admitted
	retry    time.Duration // until the call would be admitted
	err      error
}

func (r takeRes) failure() error { return r.err }

// runTakes runs one batch of takes as one script run (see gcra) and hands each
// request its answer.
func (s *Store) runTakes(batch []*takeReq) {
	ctx, cancel := s.batchCtx()
	defer cancel()
	nkeys, nargs := 0, 2
	for _, r := range batch {
		nkeys += len(r.keys)
		nargs += 1 + len(r.args)
	}
	keys := make([]string, 0, nkeys)
	args := make([]any, 0, nargs)
	args = append(args, len(batch), reserveFloor)
	for _, r := range batch {
		keys = append(keys, r.keys...)
		args = append(args, len(r.keys))
		args = append(args, r.args...)
	}
	// Run sends EVALSHA, and EVAL when Redis does not know the script (it
	// restarted or flushed its scripts): the script did not run, so
	// sending it again counts each call once.
	res, err := gcra.Run(ctx, s.client, keys, args...).Int64Slice()
	if err == nil && len(res) != 3*len(batch)+nkeys {
		err = fmt.Errorf("rate limit script: %d numbers for %d calls", len(res), len(batch))
	}
	for _, r := range batch {
		if err != nil {
			r.fail(err)
			continue
		}
		v := res[:3+len(r.keys)]
		res = res[len(v):]
		for i, got := range v[3:] {
			if got > 0 {
				s.res.add(r.buckets[i], int(got))
			}
		}
		if v[0] != 1 && s.res.take(r.buckets) {
			// Refused in Redis because this replica holds the tokens
			// (reserved by an earlier call of this batch or before this
			// call was sent): they are this call's.
			r.done <- takeRes{admitted: true}
			continue
		}
		r.done <- takeRes{admitted: v[0] == 1, refused: int(v[1]) - 1, retry: retryHint(v[2], r.buckets)}
	}
}

// retryHint is the wait Redis reports for a refused call, in microseconds,
// bounded where it enters: a GCRA refusal lasts at most one interval of a
// bucket (the time one token takes to refill), so a hint beyond the longest
// interval, or below zero, is Redis's error (or a lie), not a wait; bounding
// it before converting also keeps a huge one from overflowing.
func retryHint(micros int64, buckets []Bucket) time.Duration {
	var longest time.Duration
	for _, b := range buckets {
		longest = max(longest, b.Interval)
	}
	return time.Duration(min(max(micros, 0), longest.Microseconds())) * time.Microsecond
}

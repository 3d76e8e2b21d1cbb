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
//
// Takes of concurrent calls are pipelined: one goroutine sends whatever
// has queued while the previous pipeline was in flight as the next one.
// Each call still costs one script run in Redis, but under load many
// share one write and one read, which is most of a round trip's CPU here
// (system calls and wake-ups, not the script).
func (s *Store) Take(ctx context.Context, buckets ...Bucket) (refused int, retry time.Duration, err error) {
	req := &takeReq{keys: make([]string, len(buckets)), args: make([]any, 0, 2*len(buckets)), done: make(chan takeRes, 1)}
	for i, b := range buckets {
		req.keys[i] = b.Key
		req.args = append(req.args, max(b.Interval.Microseconds(), 1), max(b.Burst, 1))
	}
	select {
	case s.takes <- req:
	case <-ctx.Done():
		return -1, 0, ctx.Err()
	case <-s.stop:
		return -1, 0, redis.ErrClosed
	}
	var r takeRes
	select {
	case r = <-req.done:
	case <-ctx.Done():
		return -1, 0, ctx.Err()
	case <-s.stop:
		return -1, 0, redis.ErrClosed
	}
	if r.err != nil {
		s.Observe(r.err)
		return -1, 0, r.err
	}
	switch res := r.res; {
	case len(res) == 1 && res[0] == 1:
		return -1, 0, nil
	case len(res) == 3 && res[0] == 0:
		return int(res[1]) - 1, time.Duration(res[2]) * time.Microsecond, nil
	}
	return -1, 0, fmt.Errorf("rate limit script: unexpected answer %v", r.res)
}

type takeReq struct {
	keys []string
	args []any
	done chan takeRes // buffered: the batcher never waits for a caller
}

type takeRes struct {
	res []int64
	err error
}

// maxBatch bounds one pipeline.
const maxBatch = 128

// batchTakes sends the queued Takes as pipelines, one at a time, until
// the store closes.
func (s *Store) batchTakes() {
	defer s.wg.Done()
	batch := make([]*takeReq, 0, maxBatch)
	for {
		batch = batch[:0]
		select {
		case <-s.stop:
			return
		case r := <-s.takes:
			batch = append(batch, r)
		}
	more:
		for len(batch) < maxBatch {
			select {
			case r := <-s.takes:
				batch = append(batch, r)
			default:
				break more
			}
		}
		s.runBatch(batch)
	}
}

func (s *Store) runBatch(batch []*takeReq) {
	ctx, cancel := context.WithTimeout(context.Background(), s.settings.Options.WriteTimeout+s.settings.Options.ReadTimeout)
	defer cancel()
	if len(batch) == 1 {
		r := batch[0]
		res, err := gcra.Run(ctx, s.client, r.keys, r.args...).Int64Slice()
		r.done <- takeRes{res, err}
		return
	}
	cmds := make([]*redis.Cmd, len(batch))
	_, _ = s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, r := range batch {
			cmds[i] = gcra.EvalSha(ctx, p, r.keys, r.args...)
		}
		return nil
	})
	for i, r := range batch {
		res, err := cmds[i].Int64Slice()
		if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			// A Redis that restarted (or flushed its scripts): the script
			// did not run, so running it again counts the call once.
			res, err = gcra.Run(ctx, s.client, r.keys, r.args...).Int64Slice()
		}
		r.done <- takeRes{res, err}
	}
}

package sharedstate

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Local reservations. A replica whose calls keep coming takes, with a
// call's round trip, a few more tokens from a bucket than the call needs
// (the script's reservation, counted in Redis like any call), and admits
// its next calls from them without a round trip. Redis's count stays
// exact: a reserved token is taken there, so the replicas together never
// admit more than the limit. What it costs is that tokens one replica
// holds are not available to the others until it uses them or gives them
// back, which it does once they are reserveTTL old (see sweep). To keep
// that small, a reservation is granted only from a bucket with at least
// reserveFloor tokens left and is at most a quarter of them: near a
// limit, where it matters, every call is decided in Redis.
const (
	// DefaultReserve is the most tokens a replica holds per bucket
	// (state block's local_reserve).
	DefaultReserve = 16
	// reserveFloor is the fewest tokens a bucket must have left for a
	// reservation.
	reserveFloor = 8
	// reserveTTL is how long reserved tokens are held before what is left
	// of them is given back.
	reserveTTL = 250 * time.Millisecond
)

// reserves are the tokens this replica holds, per bucket key.
type reserves struct {
	max int // 0: none are reserved
	mu  sync.Mutex
	m   map[string]*held
}

type held struct {
	tokens   int
	interval time.Duration
	since    time.Time // when the oldest of tokens was reserved
}

func newReserves(max int) *reserves {
	return &reserves{max: max, m: map[string]*held{}}
}

// take admits a call from held tokens when every bucket has one: all or
// none are used.
func (r *reserves) take(buckets []Bucket) bool {
	if r.max == 0 || len(buckets) == 0 {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, b := range buckets {
		if h := r.m[b.Key]; h == nil || h.tokens == 0 {
			return false
		}
	}
	for _, b := range buckets {
		r.m[b.Key].tokens--
	}
	return true
}

// want is how many tokens to ask Redis for with a call on key.
func (r *reserves) want(key string) int {
	if r.max == 0 {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if h := r.m[key]; h != nil {
		return max(r.max-h.tokens, 0)
	}
	return r.max
}

// add holds n tokens Redis reserved from b.
func (r *reserves) add(b Bucket, n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := r.m[b.Key]
	if h == nil {
		h = &held{since: time.Now()}
		r.m[b.Key] = h
	}
	if h.tokens == 0 {
		h.since = time.Now()
	}
	h.tokens += n
	h.interval = b.Interval
}

// expired removes the reservations held since before cutoff (all of them
// when cutoff is zero) and returns what is left of them, to give back.
func (r *reserves) expired(cutoff time.Time) map[string]*held {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out map[string]*held
	for k, h := range r.m {
		if !cutoff.IsZero() && !h.since.Before(cutoff) {
			continue
		}
		delete(r.m, k)
		if h.tokens > 0 {
			if out == nil {
				out = map[string]*held{}
			}
			out[k] = h
		}
	}
	return out
}

// refund gives tokens back to their buckets: the bucket's time moves back
// by one interval per token, as if they had never been taken (the clock
// never goes back past now: a full bucket stays full).
var refund = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
for i, key in ipairs(KEYS) do
  local v = redis.call('GET', key)
  if v then
    local tat = tonumber(v) - tonumber(ARGV[2*i-1]) * tonumber(ARGV[2*i])
    if tat <= now then
      redis.call('DEL', key)
    else
      redis.call('SET', key, string.format('%.0f', tat), 'PX', math.floor((tat - now) / 1000) + 1)
    end
  end
end
return 0
`)

// giveBack refunds reservations in one script run. Tokens that cannot be
// given back (Redis does not answer) are lost until their bucket refills:
// the replicas admit fewer calls for a while, never more.
func (s *Store) giveBack(ctx context.Context, hs map[string]*held) {
	if len(hs) == 0 {
		return
	}
	keys := make([]string, 0, len(hs))
	args := make([]any, 0, 2*len(hs))
	for k, h := range hs {
		keys = append(keys, k)
		args = append(args, h.tokens, max(h.interval.Microseconds(), 1))
	}
	if err := refund.Run(ctx, s.client, keys, args...).Err(); err != nil {
		s.Observe(err)
	}
}

// sweep gives back, every reserveTTL/2, the reservations older than
// reserveTTL, until the store closes; then all of them.
func (s *Store) sweep() {
	defer s.wg.Done()
	t := time.NewTicker(reserveTTL / 2)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			ctx, cancel := s.batchCtx()
			s.giveBack(ctx, s.res.expired(time.Time{}))
			cancel()
			return
		case now := <-t.C:
			ctx, cancel := s.batchCtx()
			s.giveBack(ctx, s.res.expired(now.Add(-reserveTTL)))
			cancel()
		}
	}
}

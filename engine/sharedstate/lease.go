package sharedstate

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultLeaseTTL is how long a concurrency lease lives without being
// renewed: the longest a killed replica's calls keep their slots. A running
// call renews its lease every third of it.
const DefaultLeaseTTL = 15 * time.Second

// Semaphore is a max_concurrency held in Redis: a sorted set of leases
// scored by their expiry (Redis's clock, in ms). A lease whose holder
// stopped renewing it (a killed replica) expires and frees its slot.
type Semaphore struct {
	Key string
	Max int
	// TTL is a lease's life without renewal; 0: DefaultLeaseTTL.
	TTL time.Duration
}

// acquire drops the expired leases and adds one when fewer than Max remain.
// KEYS[1] the set; ARGV: max, ttl ms, lease id. Returns 1 or 0.
var acquire = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then
  return 0
end
local ttl = tonumber(ARGV[2])
redis.call('ZADD', KEYS[1], now + ttl, ARGV[3])
redis.call('PEXPIRE', KEYS[1], ttl * 2)
return 1
`)

// renew extends a lease that still exists. KEYS[1] the set; ARGV: ttl ms,
// lease id. Returns 1, or 0 when the lease was lost (it expired).
var renew = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[1])
local n = redis.call('ZADD', KEYS[1], 'XX', 'CH', now + ttl, ARGV[2])
redis.call('PEXPIRE', KEYS[1], ttl * 2)
return n
`)

// ErrBusy is TryAcquire's answer when every slot is leased.
var ErrBusy = errors.New("every slot is leased")

// Lease is one slot of a Semaphore, renewed in the background until
// Release.
type Lease struct {
	store *Store
	sem   Semaphore
	id    string
	stop  chan struct{}
	done  chan struct{}
}

func (sem Semaphore) ttl() time.Duration {
	if sem.TTL > 0 {
		return sem.TTL
	}
	return DefaultLeaseTTL
}

// TryAcquire takes a slot of sem, or returns ErrBusy when there is none.
// Other errors mean Redis did not answer (see Observe).
func (s *Store) TryAcquire(ctx context.Context, sem Semaphore) (*Lease, error) {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	id := hex.EncodeToString(b)
	ok, err := acquire.Run(ctx, s.client, []string{sem.Key}, sem.Max, sem.ttl().Milliseconds(), id).Int()
	if err != nil {
		s.Observe(err)
		return nil, err
	}
	if ok != 1 {
		return nil, ErrBusy
	}
	l := &Lease{store: s, sem: sem, id: id, stop: make(chan struct{}), done: make(chan struct{})}
	go l.keep()
	return l, nil
}

// Acquire waits for a slot of sem until ctx ends, polling with a backoff
// from 10ms up to poll. It returns ErrBusy when ctx ends first with every
// slot leased, or the error of a Redis that did not answer.
func (s *Store) Acquire(ctx context.Context, sem Semaphore, poll time.Duration) (*Lease, error) {
	wait := 10 * time.Millisecond
	for {
		l, err := s.TryAcquire(ctx, sem)
		if !errors.Is(err, ErrBusy) {
			if err != nil && ctx.Err() != nil {
				return nil, ErrBusy
			}
			return l, err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ErrBusy
		case <-t.C:
		}
		wait = min(wait*2, poll)
	}
}

// keep renews the lease every third of its TTL until Release.
func (l *Lease) keep() {
	defer close(l.done)
	ttl := l.sem.ttl()
	tick := time.NewTicker(ttl / 3)
	defer tick.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-tick.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), ttl/3)
		err := renew.Run(ctx, l.store.client, []string{l.sem.Key}, ttl.Milliseconds(), l.id).Err()
		cancel()
		// A failed renewal is retried at the next tick; while Redis is
		// down the lease may expire, which over-admits by at most this
		// call: the safe side of a limit that protects a backend from a
		// crowd, not a lock that guards data.
		l.store.Observe(err)
	}
}

// Release frees the slot. It is safe to call more than once.
func (l *Lease) Release() {
	select {
	case <-l.stop:
		return
	default:
	}
	close(l.stop)
	<-l.done
	ctx, cancel := context.WithTimeout(context.Background(), l.store.settings.Options.ReadTimeout+l.store.settings.Options.DialTimeout)
	defer cancel()
	// A release that fails leaves the lease to expire.
	l.store.Observe(l.store.client.ZRem(ctx, l.sem.Key, l.id).Err())
}

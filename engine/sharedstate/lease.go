package sharedstate

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
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
	// ctx ends the renewal in flight when the lease is released, so that
	// Release does not wait for a Redis that does not answer.
	ctx    context.Context
	cancel context.CancelFunc
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
	if err := ctx.Err(); err != nil {
		return nil, err // not tried: says nothing about Redis
	}
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	id := hex.EncodeToString(b)
	ok, err := acquire.Run(ctx, s.client, []string{sem.Key}, sem.Max, sem.ttl().Milliseconds(), id).Int()
	if err != nil {
		if budgetSpent(ctx) {
			err = fmt.Errorf("no answer within the call's state timeout: %w", context.DeadlineExceeded)
		}
		s.Observe(err)
		return nil, err
	}
	if ok != 1 {
		return nil, ErrBusy
	}
	l := &Lease{store: s, sem: sem, id: id, stop: make(chan struct{}), done: make(chan struct{})}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	go l.keep()
	return l, nil
}

// Acquire waits for a slot of sem until ctx ends, polling with a backoff
// from 10ms up to poll. It returns ErrBusy when ctx ends first with every
// slot leased, or the error of a Redis that did not answer. Each try is
// charged to budget (the wait between tries is not: it waits for other
// calls, not for Redis); a budget spent is a Redis that did not answer.
func (s *Store) Acquire(ctx context.Context, sem Semaphore, poll time.Duration, budget *Budget) (*Lease, error) {
	wait := 10 * time.Millisecond
	for {
		if budget.Spent() {
			return nil, fmt.Errorf("no answer within the call's state timeout: %w", context.DeadlineExceeded)
		}
		octx, done := budget.Op(ctx)
		l, err := s.TryAcquire(octx, sem)
		done()
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
		ctx, cancel := context.WithTimeout(l.ctx, ttl/3)
		err := renew.Run(ctx, l.store.client, []string{l.sem.Key}, ttl.Milliseconds(), l.id).Err()
		cancel()
		if l.ctx.Err() != nil {
			return // released meanwhile: not a failure of Redis
		}
		// A failed renewal is retried at the next tick; while Redis is
		// down the lease may expire, which over-admits by at most this
		// call: the safe side of a limit that protects a backend from a
		// crowd, not a lock that guards data.
		l.store.Observe(err)
	}
}

// Release frees the slot, within the state block's timeout. It is safe
// to call more than once.
func (l *Lease) Release() {
	ctx, cancel := context.WithTimeout(context.Background(), l.store.settings.Options.ReadTimeout)
	defer cancel()
	l.ReleaseContext(ctx)
}

// ReleaseContext frees the slot within ctx (a call's Budget). A release
// that fails, or finds the store down, leaves the lease to expire (its
// TTL): the slot is taken for that long, the safe side of a limit. It is
// safe to call more than once.
func (l *Lease) ReleaseContext(ctx context.Context) {
	select {
	case <-l.stop:
		return
	default:
	}
	close(l.stop)
	l.cancel()
	<-l.done
	if !l.store.Healthy() || ctx.Err() != nil {
		return
	}
	err := l.store.client.ZRem(ctx, l.sem.Key, l.id).Err()
	if err != nil && budgetSpent(ctx) {
		err = fmt.Errorf("releasing a lease: no answer within the call's state timeout: %w", context.DeadlineExceeded)
	}
	l.store.Observe(err)
}

package sharedstate

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Backoff of the health probe while Redis does not answer: the first retry
// after minBackoff, doubling up to maxBackoff. While Redis answers it is
// probed every healthyProbe, and every failed command marks it down at once.
const (
	minBackoff   = 100 * time.Millisecond
	maxBackoff   = 5 * time.Second
	healthyProbe = 5 * time.Second
)

// Store is the runtime side of a state block: one Redis client, the key
// space and the health. A reload whose state block is unchanged keeps its
// Store (see Settings.Fingerprint); one that changes it opens a new Store
// and the old one is closed once its last call has finished.
//
// A nil *Store is valid and means "no shared state": Healthy is false and
// its users keep their state in memory.
type Store struct {
	settings *Settings
	client   redis.UniversalClient
	log      *slog.Logger

	up        atomic.Bool
	failures  atomic.Uint64 // operations that failed for the store's sake
	fallbacks atomic.Uint64 // calls served by a fail-open fallback
	refusals  atomic.Uint64 // calls refused by a fail-closed user
	reserved  atomic.Uint64 // rate-limit checks answered from local reservations
	checked   atomic.Uint64 // rate-limit checks decided in Redis
	// mismatches are values Redis answered that were not bound to the key
	// asked for (see Mismatched); mismatchLog is when one was last logged
	// (Unix ns).
	mismatches  atomic.Uint64
	mismatchLog atomic.Int64

	mu        sync.Mutex
	lastErr   string
	since     time.Time // of the current up/down state
	kick      chan struct{}
	stop      chan struct{}
	done      chan struct{}
	takes     chan *takeReq // see Take
	gets      chan *getReq  // see Get
	res       *reserves     // tokens reserved by Take
	wg        sync.WaitGroup
	closeOnce sync.Once
}

// Open opens a Store for settings. It does not wait for Redis: the client
// connects on first use, and the health probe starts at once, so that a
// replica starts (fail-open) while Redis is still coming up. log receives
// the up/down transitions; nil: slog.Default().
func Open(settings *Settings, log *slog.Logger) *Store {
	if log == nil {
		log = slog.Default()
	}
	opts := *settings.Options
	s := &Store{
		settings: settings,
		client:   redis.NewClient(&opts),
		log:      log.With("state", settings.Addr),
		since:    time.Now(),
		kick:     make(chan struct{}, 1),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
		takes:    make(chan *takeReq, maxBatch),
		gets:     make(chan *getReq, maxBatch),
		res:      newReserves(settings.Reserve),
	}
	// The first probe runs before Open returns, so that the first calls
	// find the store up (and their limits global) when Redis answers; when
	// it does not, the replica starts anyway, with the tools' fail modes.
	if err := s.ping(); err != nil {
		s.lastErr = err.Error()
		s.log.Warn("shared state not answering: limits fall back per tool (on_state_failure) until it does", "err", err.Error())
	} else {
		s.up.Store(true)
	}
	go s.probe()
	s.wg.Add(3)
	go batches(s, s.takes, s.runTakes)
	go batches(s, s.gets, s.runGets)
	go s.sweep()
	return s
}

// Client returns the Redis client. It is the Store's: users must not close
// it.
func (s *Store) Client() redis.UniversalClient { return s.client }

// Settings returns the settings the store was opened with.
func (s *Store) Settings() *Settings { return s.settings }

// OnFailure is the default fail mode of the state block.
func (s *Store) OnFailure() FailMode {
	if s == nil {
		return FailOpen
	}
	return s.settings.OnFailure
}

// Key returns the key made of the store's prefix and parts, separated by
// colons. Each part is escaped (":" and "%" as %3A and %25), so that parts
// holding colons (a principal's name) can never make two different lists
// of parts the same key.
func (s *Store) Key(parts ...string) string {
	var b strings.Builder
	b.WriteString(s.settings.Prefix)
	for _, p := range parts {
		b.WriteByte(':')
		b.WriteString(escapePart(p))
	}
	return b.String()
}

var partEscaper = strings.NewReplacer("%", "%25", ":", "%3A")

func escapePart(p string) string {
	if !strings.ContainsAny(p, "%:") {
		return p
	}
	return partEscaper.Replace(p)
}

// Healthy reports whether Redis answered the latest probe or command. A
// nil Store is never healthy. Users check it before a call goes to Redis:
// while it is false they apply their fail mode without waiting for a
// timeout, and the probe reconnects with backoff.
func (s *Store) Healthy() bool { return s != nil && s.up.Load() }

// Status is the store's state for /readyz, logs and metrics.
type Status struct {
	Addr      string    `json:"addr"`
	Up        bool      `json:"up"`
	Since     time.Time `json:"since"`
	Error     string    `json:"error,omitempty"`
	Failures  uint64    `json:"failures"`
	Fallbacks uint64    `json:"fallbacks"`
	Refusals  uint64    `json:"refusals"`
	// LimitChecks are the rate-limit checks decided in Redis, and
	// LocalAdmits the calls admitted from this replica's reservations
	// without a round trip (see local_reserve).
	LimitChecks uint64 `json:"limit_checks"`
	LocalAdmits uint64 `json:"local_admits"`
	// CacheMismatches are cached values Redis answered that were bound to
	// another key (or altered): each was a miss.
	CacheMismatches uint64 `json:"cache_mismatches"`
}

// Status returns the store's state.
func (s *Store) Status() Status {
	if s == nil {
		return Status{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Status{Addr: s.settings.Addr, Up: s.up.Load(), Since: s.since, Failures: s.failures.Load(), Fallbacks: s.fallbacks.Load(), Refusals: s.refusals.Load(),
		LimitChecks: s.checked.Load(), LocalAdmits: s.reserved.Load(), CacheMismatches: s.mismatches.Load()}
	if !st.Up {
		st.Error = s.lastErr
	}
	return st
}

// Observe reports the outcome of an operation a user ran on the client. An
// error that says Redis is unreachable (a network error or a timeout)
// marks the store down at once, so that the next calls do not wait for it
// too, and wakes the probe; other errors (a script's, a wrong type) are
// the user's to report. It returns whether err was such a failure.
func (s *Store) Observe(err error) bool {
	if err == nil || errors.Is(err, redis.Nil) {
		return false
	}
	if !IsUnavailable(err) {
		return false
	}
	s.failures.Add(1)
	s.setDown(err)
	return true
}

// mismatchLogEvery bounds the warnings about mismatched values: a Redis
// that answers wrongly may do so for every call.
const mismatchLogEvery = time.Minute

// Mismatched counts one value Redis answered for key that was not bound to
// it (what says how), and logs it, at most once per mismatchLogEvery with
// the count so far: Redis, or something between it and this replica,
// answered one key with another's value, or altered it.
func (s *Store) Mismatched(what, key string) {
	n := s.mismatches.Add(1)
	now := time.Now().UnixNano()
	last := s.mismatchLog.Load()
	if last != 0 && now-last < int64(mismatchLogEvery) || !s.mismatchLog.CompareAndSwap(last, now) {
		return
	}
	s.log.Warn("shared state answered "+what+"; treated as a miss (a bug, a proxy, or someone writing to Redis?)", "key", key, "mismatches", n)
}

// Refused counts one call that a fail-closed user refused because the
// store was down.
func (s *Store) Refused() { s.refusals.Add(1) }

// FellBack counts one call that a fail-open user served with its local
// state because the store was down.
func (s *Store) FellBack() { s.fallbacks.Add(1) }

// IsUnavailable reports whether err means that Redis could not be reached
// or did not answer in time (as opposed to an error Redis answered with).
func IsUnavailable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, redis.ErrClosed) || errors.Is(err, redis.ErrPoolTimeout) || errors.Is(err, ErrDown) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	msg := err.Error()
	// Redis's own answers while it cannot serve: loading its dataset after
	// a restart, a replica that lost its master, a read-only replica
	// after a failover, and connections it dropped.
	for _, p := range []string{"LOADING", "MASTERDOWN", "READONLY", "TRYAGAIN", "CLUSTERDOWN", "EOF", "connection reset", "broken pipe", "connection refused"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}

func (s *Store) setDown(err error) {
	msg := err.Error()
	s.mu.Lock()
	was := s.up.Swap(false)
	s.lastErr = msg
	if was {
		s.since = time.Now()
	}
	s.mu.Unlock()
	if was {
		s.log.Warn("shared state down: limits fall back per tool (on_state_failure)", "err", msg)
		select {
		case s.kick <- struct{}{}:
		default:
		}
	}
}

func (s *Store) setUp() {
	s.mu.Lock()
	was := s.up.Swap(true)
	if !was {
		s.since = time.Now()
		s.lastErr = ""
	}
	s.mu.Unlock()
	if !was {
		s.log.Info("shared state up")
	}
}

// probe pings Redis: every healthyProbe while it answers, and with a
// doubling backoff while it does not (a command that fails kicks it to
// start the backoff at once).
func (s *Store) probe() {
	defer close(s.done)
	wait, streak := healthyProbe, 0
	if !s.up.Load() {
		wait = minBackoff
	}
	for {
		t := time.NewTimer(wait)
		select {
		case <-s.stop:
			t.Stop()
			return
		case <-s.kick:
			t.Stop()
			// A command failed: probe soon, then back off from there.
			wait, streak = minBackoff, 0
			continue
		case <-t.C:
		}
		err := s.ping()
		select {
		case <-s.stop:
			return
		default:
		}
		if err == nil {
			s.setUp()
			wait, streak = healthyProbe, 0
			continue
		}
		if s.up.Load() {
			s.failures.Add(1)
		}
		s.setDown(err)
		select { // setDown may have kicked: the backoff starts here
		case <-s.kick:
		default:
		}
		wait = min(minBackoff<<min(streak, 16), maxBackoff)
		streak++
	}
}

func (s *Store) ping() error {
	ctx, cancel := context.WithTimeout(context.Background(), s.settings.Options.DialTimeout+s.settings.Options.ReadTimeout)
	defer cancel()
	return s.client.Ping(ctx).Err()
}

// Close stops the probe and closes the client. It is safe to call more
// than once, and on a nil Store.
func (s *Store) Close() error {
	if s == nil {
		return nil
	}
	var err error
	s.closeOnce.Do(func() {
		close(s.stop)
		<-s.done
		s.wg.Wait()
		err = s.client.Close()
	})
	return err
}

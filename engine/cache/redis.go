package cache

import (
	"context"
	"encoding/binary"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is a store shared by every replica that uses the same Redis and
// key namespace: a result one replica computed is a hit on the others.
// Entries are plain Redis strings with a TTL (SET ... PX), so Redis
// expires them itself and its maxmemory policy may evict them too.
type Redis struct {
	shared Shared
	key    func(hash string) string
	// maxEntry bounds what one entry may hold in Redis; larger values are
	// not stored.
	maxEntry int
}

// Shared is what the store asks of the shared state (sharedstate.Store):
// its client; its health, so that while Redis is known to be down
// operations fail at once instead of waiting for a timeout each, and every
// failure is reported so that the others stop trying too; and its batched
// read, so that the hits of concurrent calls share one round trip.
type Shared interface {
	Client() redis.UniversalClient
	Healthy() bool
	Observe(err error) bool
	// Get returns a string key's value, or redis.Nil; it reports Redis's
	// failures to Observe itself.
	Get(ctx context.Context, key string) ([]byte, error)
}

// ErrUnavailable is an operation not tried because Redis is known to be
// down.
var ErrUnavailable = errors.New("the shared state (Redis) is down")

// NewRedis returns a store on shared; key turns a call's key into the
// Redis key, with the deployment's namespace (sharedstate.Store.Key).
func NewRedis(shared Shared, key func(hash string) string, maxEntry int) *Redis {
	return &Redis{shared: shared, key: key, maxEntry: maxEntry}
}

// Kind is "redis".
func (r *Redis) Kind() string { return "redis" }

// A stored value is the time it was computed (Unix milliseconds, 8 bytes
// big-endian) followed by Entry.Value.
const stampLen = 8

// Get returns the entry of key, with its Value (Decoded is nil).
func (r *Redis) Get(ctx context.Context, key string) (Entry, error) {
	if !r.shared.Healthy() {
		return Entry{}, ErrUnavailable
	}
	b, err := r.shared.Get(ctx, r.key(key))
	if errors.Is(err, redis.Nil) {
		return Entry{}, ErrMiss
	}
	if err != nil {
		return Entry{}, err
	}
	if len(b) < stampLen {
		return Entry{}, ErrMiss // not ours: treat as absent
	}
	at := time.UnixMilli(int64(binary.BigEndian.Uint64(b[:stampLen])))
	return Entry{Value: b[stampLen:], At: at}, nil
}

// Set stores e.Value under key for ttl, unless it is larger than the
// store's bound per entry.
func (r *Redis) Set(ctx context.Context, key string, e Entry, ttl time.Duration) error {
	if len(e.Value) > r.maxEntry || ttl <= 0 {
		return nil
	}
	if !r.shared.Healthy() {
		return ErrUnavailable
	}
	b := make([]byte, stampLen+len(e.Value))
	binary.BigEndian.PutUint64(b, uint64(e.At.UnixMilli()))
	copy(b[stampLen:], e.Value)
	err := r.shared.Client().Set(ctx, r.key(key), b, ttl).Err()
	if err != nil {
		r.shared.Observe(err)
	}
	return err
}

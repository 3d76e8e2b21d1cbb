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
	client redis.UniversalClient
	key    func(hash string) string
	// maxEntry bounds what one entry may hold in Redis; larger values are
	// not stored.
	maxEntry int
	health   Health // nil: always try
}

// Health is what the store asks of the shared state's health
// (sharedstate.Store): while Redis is known to be down, operations fail at
// once instead of waiting for a timeout each, and every failure is
// reported so that the others stop trying too.
type Health interface {
	Healthy() bool
	Observe(err error) bool
}

// ErrUnavailable is an operation not tried because Redis is known to be
// down.
var ErrUnavailable = errors.New("the shared state (Redis) is down")

// NewRedis returns a store on client; key turns a call's key into the
// Redis key, with the deployment's namespace (sharedstate.Store.Key);
// health, when not nil, gates and hears of every operation.
func NewRedis(client redis.UniversalClient, key func(hash string) string, maxEntry int, health Health) *Redis {
	return &Redis{client: client, key: key, maxEntry: maxEntry, health: health}
}

func (r *Redis) up() bool { return r.health == nil || r.health.Healthy() }

func (r *Redis) observe(err error) {
	if r.health != nil && err != nil {
		r.health.Observe(err)
	}
}

// Kind is "redis".
func (r *Redis) Kind() string { return "redis" }

// A stored value is the time it was computed (Unix milliseconds, 8 bytes
// big-endian) followed by Entry.Value.
const stampLen = 8

// Get returns the entry of key, with its Value (Decoded is nil).
func (r *Redis) Get(ctx context.Context, key string) (Entry, error) {
	if !r.up() {
		return Entry{}, ErrUnavailable
	}
	b, err := r.client.Get(ctx, r.key(key)).Bytes()
	if errors.Is(err, redis.Nil) {
		return Entry{}, ErrMiss
	}
	if err != nil {
		r.observe(err)
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
	if !r.up() {
		return ErrUnavailable
	}
	b := make([]byte, stampLen+len(e.Value))
	binary.BigEndian.PutUint64(b, uint64(e.At.UnixMilli()))
	copy(b[stampLen:], e.Value)
	err := r.client.Set(ctx, r.key(key), b, ttl).Err()
	r.observe(err)
	return err
}

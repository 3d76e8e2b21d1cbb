package cache

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is a store shared by every replica that uses the same Redis and
// key namespace: a result one replica computed is a hit on the others.
// Entries are plain Redis strings with a TTL (SET ... PX), so Redis
// expires them itself and its maxmemory policy may evict them too.
//
// What Redis answers is not trusted to be the entry asked for: a bug, a
// proxy that mixes up replies, or anyone who can write to Redis could
// answer one key with another's value, which would serve one caller's
// result to another (the principal is part of the key, not of the value).
// Each stored value is therefore bound to its Redis key by a MAC over the
// key, the time and the value; a value whose MAC does not match is a miss,
// counted and logged (Shared.Mismatched). The MAC's key is the
// deployment's request_state_key when it has one, so that forging an
// entry takes that secret; without one it is a fixed key, which still
// catches every value moved to another key or altered by accident.
type Redis struct {
	shared Shared
	key    func(hash string) string
	// maxEntry bounds what one entry may hold in Redis; larger values are
	// not stored.
	maxEntry int
	// bindKey keys the MAC that binds a value to its key.
	bindKey []byte
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
	// Mismatched counts (and logs, rate-bounded) one value Redis answered
	// for key that was not bound to it.
	Mismatched(what, key string)
}

// ErrUnavailable is an operation not tried because Redis is known to be
// down.
var ErrUnavailable = errors.New("the shared state (Redis) is down")

// NewRedis returns a store on shared; key turns a call's key into the
// Redis key, with the deployment's namespace (sharedstate.Store.Key).
// secret, when not empty, is the deployment's secret (request_state_key)
// from which the key of the MAC binding each value to its key is derived.
func NewRedis(shared Shared, key func(hash string) string, maxEntry int, secret []byte) *Redis {
	mac := hmac.New(sha256.New, []byte("mcpd cache binding v1"))
	mac.Write(secret)
	return &Redis{shared: shared, key: key, maxEntry: maxEntry, bindKey: mac.Sum(nil)}
}

// Kind is "redis".
func (r *Redis) Kind() string { return "redis" }

// A stored value is a version byte (formatV2), the time it was computed
// (Unix milliseconds, 8 bytes big-endian), the MAC binding it to its key
// (see tag), and Entry.Value. The values of earlier versions began with
// the time, whose first byte is 0 for millennia: they are misses,
// overwritten by the call that finds them, and not counted as mismatches.
const (
	formatV2  = 2
	stampLen  = 8
	tagLen    = sha256.Size
	headerLen = 1 + stampLen + tagLen
)

// tag is the MAC of a value stored under the Redis key rkey: over the
// key (length-prefixed), the stamp and the value.
func (r *Redis) tag(rkey string, stamp, value []byte) []byte {
	mac := hmac.New(sha256.New, r.bindKey)
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(rkey)))
	mac.Write(n[:])
	mac.Write([]byte(rkey))
	mac.Write(stamp)
	mac.Write(value)
	return mac.Sum(nil)
}

// Get returns the entry of key, with its Value (Decoded is nil). A value
// not bound to key is a miss (see Redis).
func (r *Redis) Get(ctx context.Context, key string) (Entry, error) {
	if !r.shared.Healthy() {
		return Entry{}, ErrUnavailable
	}
	rkey := r.key(key)
	b, err := r.shared.Get(ctx, rkey)
	if errors.Is(err, redis.Nil) {
		return Entry{}, ErrMiss
	}
	if err != nil {
		return Entry{}, err
	}
	if len(b) == 0 || b[0] != formatV2 {
		return Entry{}, ErrMiss // an earlier version's: treat as absent
	}
	if len(b) < headerLen {
		r.shared.Mismatched("a value too short to hold its binding", rkey)
		return Entry{}, ErrMiss
	}
	stamp, tag, value := b[1:1+stampLen], b[1+stampLen:headerLen], b[headerLen:]
	if !hmac.Equal(tag, r.tag(rkey, stamp, value)) {
		r.shared.Mismatched("a value bound to another key, or altered", rkey)
		return Entry{}, ErrMiss
	}
	at := time.UnixMilli(int64(binary.BigEndian.Uint64(stamp)))
	return Entry{Value: value, At: at}, nil
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
	if err := ctx.Err(); err != nil {
		return err // not tried: says nothing about Redis
	}
	rkey := r.key(key)
	b := make([]byte, headerLen+len(e.Value))
	b[0] = formatV2
	stamp := b[1 : 1+stampLen]
	binary.BigEndian.PutUint64(stamp, uint64(e.At.UnixMilli()))
	copy(b[headerLen:], e.Value)
	copy(b[1+stampLen:headerLen], r.tag(rkey, stamp, e.Value))
	err := r.shared.Client().Set(ctx, rkey, b, ttl).Err()
	if err != nil {
		r.shared.Observe(err)
	}
	return err
}

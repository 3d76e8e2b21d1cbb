package grants

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Memory is a Backend in this process's memory. It holds at most max
// values; when full, expired ones are dropped, then the one that expires
// first.
type Memory struct {
	max int
	now func() time.Time

	mu sync.Mutex
	m  map[string]memValue
}

type memValue struct {
	val    []byte
	expiry time.Time
}

// NewMemory returns an empty memory backend holding at most max values.
func NewMemory(max int) *Memory {
	return &Memory{max: max, now: time.Now, m: map[string]memValue{}}
}

func (m *Memory) Shared() bool { return false }

func (m *Memory) Get(_ context.Context, key string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.m[key]
	if !ok || !m.now().Before(v.expiry) {
		delete(m.m, key)
		return nil, ErrNotFound
	}
	return v.val, nil
}

func (m *Memory) Set(_ context.Context, key string, val []byte, ttl time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	if _, ok := m.m[key]; !ok && len(m.m) >= m.max {
		var first string
		var firstExp time.Time
		for k, v := range m.m {
			if !now.Before(v.expiry) {
				delete(m.m, k)
				continue
			}
			if first == "" || v.expiry.Before(firstExp) {
				first, firstExp = k, v.expiry
			}
		}
		if len(m.m) >= m.max {
			delete(m.m, first)
		}
	}
	m.m[key] = memValue{val: append([]byte(nil), val...), expiry: now.Add(ttl)}
	return nil
}

func (m *Memory) Take(ctx context.Context, key string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.m[key]
	delete(m.m, key)
	if !ok || !m.now().Before(v.expiry) {
		return nil, ErrNotFound
	}
	return v.val, nil
}

func (m *Memory) Delete(_ context.Context, key string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.m[key]
	delete(m.m, key)
	return ok && m.now().Before(v.expiry), nil
}

func (m *Memory) Keys(_ context.Context, prefix string, max int) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	var out []string
	for k, v := range m.m {
		if strings.HasPrefix(k, prefix) && now.Before(v.expiry) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	if len(out) > max {
		out = out[:max]
	}
	return out, nil
}

// Redis is a Backend in Redis, under a key prefix, shared by every
// replica that uses the same Redis and prefix.
type Redis struct {
	Client redis.UniversalClient
	Prefix string // e.g. "mcpd:grants"; keys are Prefix + ":" + key
}

func (r *Redis) Shared() bool { return true }

func (r *Redis) key(k string) string { return r.Prefix + ":" + k }

func (r *Redis) Get(ctx context.Context, key string) ([]byte, error) {
	b, err := r.Client.Get(ctx, r.key(key)).Bytes()
	return b, redisErr(err)
}

func (r *Redis) Set(ctx context.Context, key string, val []byte, ttl time.Duration) error {
	return redisErr(r.Client.Set(ctx, r.key(key), val, ttl).Err())
}

func (r *Redis) Take(ctx context.Context, key string) ([]byte, error) {
	b, err := r.Client.GetDel(ctx, r.key(key)).Bytes()
	return b, redisErr(err)
}

func (r *Redis) Delete(ctx context.Context, key string) (bool, error) {
	n, err := r.Client.Del(ctx, r.key(key)).Result()
	return n > 0, redisErr(err)
}

func (r *Redis) Keys(ctx context.Context, prefix string, max int) ([]string, error) {
	var out []string
	iter := r.Client.Scan(ctx, 0, escapeGlob(r.key(prefix))+"*", 256).Iterator()
	for iter.Next(ctx) && len(out) < max {
		out = append(out, strings.TrimPrefix(iter.Val(), r.Prefix+":"))
	}
	if err := iter.Err(); err != nil {
		return nil, redisErr(err)
	}
	sort.Strings(out)
	return out, nil
}

// escapeGlob escapes what SCAN's MATCH reads as a pattern.
func escapeGlob(s string) string {
	return strings.NewReplacer(`\`, `\\`, "*", `\*`, "?", `\?`, "[", `\[`, "]", `\]`).Replace(s)
}

func redisErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, redis.Nil):
		return ErrNotFound
	}
	return fmt.Errorf("the grant store (Redis) failed: %w", err)
}

package cache

import (
	"container/list"
	"context"
	"sync"
	"time"
)

// entryOverhead is what one entry of the memory store costs besides its
// value: its key (64 bytes of hex), the list element, the map slot and the
// decoded result's headers. Counting it keeps a cache of many tiny entries
// within its bound too.
const entryOverhead = 256

// Memory is an in-memory LRU store bounded in bytes: the encoded size of
// its values plus a fixed overhead per entry. Storing past the bound
// evicts the least recently used entries; an entry past its TTL is a miss
// and is dropped when found.
type Memory struct {
	maxBytes int64

	mu        sync.Mutex
	ll        *list.List // front: most recently used
	m         map[string]*list.Element
	bytes     int64
	evictions uint64
}

type memEntry struct {
	key     string
	value   any
	size    int64
	at      time.Time
	expires time.Time
}

// NewMemory returns an empty store of at most maxBytes.
func NewMemory(maxBytes int64) *Memory {
	return &Memory{maxBytes: maxBytes, ll: list.New(), m: map[string]*list.Element{}}
}

// Kind is "memory".
func (c *Memory) Kind() string { return "memory" }

// MaxBytes is the store's bound.
func (c *Memory) MaxBytes() int64 { return c.maxBytes }

// Get returns the entry of key; its Decoded is what Set was given (its
// Value is nil).
func (c *Memory) Get(_ context.Context, key string) (Entry, error) {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.m[key]
	if !ok {
		return Entry{}, ErrMiss
	}
	e := el.Value.(*memEntry)
	if !now.Before(e.expires) {
		c.remove(el)
		return Entry{}, ErrMiss
	}
	c.ll.MoveToFront(el)
	return Entry{Decoded: e.value, At: e.at}, nil
}

// Set stores e under key for ttl, evicting the least recently used
// entries to make room. An entry larger than the whole store is not
// stored.
func (c *Memory) Set(_ context.Context, key string, e Entry, ttl time.Duration) error {
	size := int64(len(e.Value)) + entryOverhead
	if size > c.maxBytes || ttl <= 0 {
		return nil
	}
	v := e.Decoded
	if v == nil {
		v = e.Value
	}
	me := &memEntry{key: key, value: v, size: size, at: e.At, expires: e.At.Add(ttl)}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.m[key]; ok {
		c.remove(old)
	}
	for c.bytes+size > c.maxBytes {
		oldest := c.ll.Back()
		if oldest == nil {
			break
		}
		c.remove(oldest)
		c.evictions++
	}
	c.m[key] = c.ll.PushFront(me)
	c.bytes += size
	return nil
}

func (c *Memory) remove(el *list.Element) {
	e := c.ll.Remove(el).(*memEntry)
	delete(c.m, e.key)
	c.bytes -= e.size
}

// Stats are a memory store's current size.
type Stats struct {
	Entries   int
	Bytes     int64
	Evictions uint64
}

// Stats returns the store's entries, bytes and evictions so far.
func (c *Memory) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Stats{Entries: len(c.m), Bytes: c.bytes, Evictions: c.evictions}
}

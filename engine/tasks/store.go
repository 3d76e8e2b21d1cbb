package tasks

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"
)

// Store keeps task records: Memory for one process, Redis for replicas
// that share them. Every method is safe for concurrent use; a record a
// Store returns is the caller's own copy.
type Store interface {
	// Create adds r, unless its owner already holds maxActive tasks that
	// have not ended, or maxAll that have not expired (ErrTooMany).
	Create(ctx context.Context, r *Record, maxActive, maxAll int) error
	// Get returns owner's task id, or ErrNotFound: a task of another
	// owner is not found either.
	Get(ctx context.Context, owner, id string) (*Record, error)
	// Update applies f to owner's task id atomically and returns the
	// record as it is after; f returns false to leave it unchanged.
	Update(ctx context.Context, owner, id string, f func(*Record) bool) (*Record, error)
	// List returns at most n tasks of every owner that have not expired,
	// for the console and the metrics.
	List(ctx context.Context, n int) ([]*Record, error)
}

// OwnerLister is a Store that lists one owner's tasks (tasks/list of
// 2025-11-25): Memory and Redis are.
type OwnerLister interface {
	// ListOwner returns at most n of owner's tasks that have not expired,
	// in the order of their ids, those with an id after after alone ("":
	// all), and whether more follow.
	ListOwner(ctx context.Context, owner, after string, n int) ([]*Record, bool, error)
}

// page returns at most n of ids after after, sorted, and whether more
// follow; it sorts ids.
func page(ids []string, after string, n int) ([]string, bool) {
	slices.Sort(ids)
	i, _ := slices.BinarySearch(ids, after)
	for i < len(ids) && ids[i] <= after {
		i++
	}
	ids = ids[i:]
	if len(ids) > n {
		return ids[:n], true
	}
	return ids, false
}

// Memory is a Store in this process's memory, bounded in its number of
// tasks. The zero value is not usable: see NewMemory.
type Memory struct {
	max int
	now func() time.Time

	mu      sync.Mutex
	byID    map[string]*Record
	byOwner map[string]map[string]struct{}
}

// DefaultMaxMemoryTasks bounds the tasks a Memory store holds, every
// caller together.
const DefaultMaxMemoryTasks = 10000

// NewMemory returns an empty store of at most max tasks (0: the default).
func NewMemory(max int) *Memory {
	if max <= 0 {
		max = DefaultMaxMemoryTasks
	}
	return &Memory{max: max, now: time.Now, byID: map[string]*Record{}, byOwner: map[string]map[string]struct{}{}}
}

func (m *Memory) Create(_ context.Context, r *Record, maxActive, maxAll int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	own := m.byOwner[r.Owner]
	for id := range own {
		m.expire(id, now)
	}
	own = m.byOwner[r.Owner]
	active := 0
	for id := range own {
		if !m.byID[id].Status.Terminal() {
			active++
		}
	}
	if active >= maxActive || len(own) >= maxAll {
		return ErrTooMany
	}
	if len(m.byID) >= m.max {
		m.sweep(now)
		if len(m.byID) >= m.max {
			return ErrTooMany
		}
	}
	if own == nil {
		own = map[string]struct{}{}
		m.byOwner[r.Owner] = own
	}
	own[r.ID] = struct{}{}
	m.byID[r.ID] = clone(r)
	return nil
}

func (m *Memory) Get(_ context.Context, owner, id string) (*Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.find(owner, id)
	if r == nil {
		return nil, ErrNotFound
	}
	return clone(r), nil
}

func (m *Memory) Update(_ context.Context, owner, id string, f func(*Record) bool) (*Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.find(owner, id)
	if r == nil {
		return nil, ErrNotFound
	}
	c := clone(r)
	if f(c) {
		m.byID[id] = c
		return clone(c), nil
	}
	return clone(r), nil
}

func (m *Memory) List(_ context.Context, n int) ([]*Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweep(m.now())
	out := make([]*Record, 0, min(n, len(m.byID)))
	for _, r := range m.byID {
		if len(out) == n {
			break
		}
		out = append(out, clone(r))
	}
	return out, nil
}

func (m *Memory) ListOwner(_ context.Context, owner, after string, n int) ([]*Record, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	var ids []string
	for id := range m.byOwner[owner] {
		if !m.expire(id, now) {
			ids = append(ids, id)
		}
	}
	ids, more := page(ids, after, n)
	out := make([]*Record, 0, len(ids))
	for _, id := range ids {
		out = append(out, clone(m.byID[id]))
	}
	return out, more, nil
}

// find returns owner's unexpired task id; m.mu is held.
func (m *Memory) find(owner, id string) *Record {
	if m.expire(id, m.now()) {
		return nil
	}
	r := m.byID[id]
	if r == nil || r.Owner != owner {
		return nil
	}
	return r
}

// expire removes task id if it expired by now, and reports whether it did.
func (m *Memory) expire(id string, now time.Time) bool {
	r := m.byID[id]
	if r == nil || now.Before(r.Expires) {
		return false
	}
	delete(m.byID, id)
	if own := m.byOwner[r.Owner]; own != nil {
		delete(own, id)
		if len(own) == 0 {
			delete(m.byOwner, r.Owner)
		}
	}
	return true
}

func (m *Memory) sweep(now time.Time) {
	for id := range m.byID {
		m.expire(id, now)
	}
}

func clone(r *Record) *Record {
	c := *r
	c.Inputs = maps.Clone(r.Inputs)
	c.Answers = maps.Clone(r.Answers)
	if r.Error != nil {
		e := *r.Error
		c.Error = &e
	}
	return &c
}

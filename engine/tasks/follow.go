package tasks

import (
	"context"
	"errors"
	"slices"
	"strings"
)

// Follow is the Store of a server whose config a reload may change: it
// keeps new tasks where the current config says (the shared state when it
// has a state block, this process's memory otherwise), and still answers
// for the tasks kept in the other, so that a reload that adds, changes or
// removes the state block needs no restart and loses no task it can keep:
//
//   - a state block added: new tasks go to Redis, where every replica
//     answers for them; those created before stay in this process's
//     memory, answered by this replica, until they expire.
//   - a state block removed: new tasks stay in memory; those in Redis can
//     no longer be reached (the config names no Redis): to their pollers
//     they are unknown, and the ones this replica runs are cancelled at
//     their next renewal, as a task whose record is gone is. Other
//     replicas that still have the block mark them failed once their
//     lease has run out.
//   - a state block changed (another Redis, another key_prefix): as
//     removed for the tasks in the old one.
//
// The memory store is asked first: it is local and costs no round trip.
// The bound of a caller's tasks is counted in the store a task is created
// in, so for one TTL after such a reload a caller may hold up to twice
// max_per_caller.
type Follow struct {
	mem    *Memory
	redis  *Redis
	shared func() bool // whether the current config has a state block
}

// NewFollow returns a store that creates tasks in redis while shared
// reports true, in mem otherwise, and finds them in either.
func NewFollow(mem *Memory, redis *Redis, shared func() bool) *Follow {
	return &Follow{mem: mem, redis: redis, shared: shared}
}

// notThere reports whether err means the task is not in that store: not
// found, or no shared state to look in.
func notThere(err error) bool { return errors.Is(err, ErrNotFound) || errors.Is(err, errNoState) }

func (f *Follow) Create(ctx context.Context, r *Record, maxActive, maxAll int) error {
	if f.shared() {
		return f.redis.Create(ctx, r, maxActive, maxAll)
	}
	return f.mem.Create(ctx, r, maxActive, maxAll)
}

func (f *Follow) Get(ctx context.Context, owner, id string) (*Record, error) {
	r, err := f.mem.Get(ctx, owner, id)
	if !errors.Is(err, ErrNotFound) {
		return r, err
	}
	r, err = f.redis.Get(ctx, owner, id)
	if notThere(err) {
		return nil, ErrNotFound
	}
	return r, err
}

func (f *Follow) Update(ctx context.Context, owner, id string, fn func(*Record) bool) (*Record, error) {
	r, err := f.mem.Update(ctx, owner, id, fn)
	if !errors.Is(err, ErrNotFound) {
		return r, err
	}
	r, err = f.redis.Update(ctx, owner, id, fn)
	if notThere(err) {
		return nil, ErrNotFound
	}
	return r, err
}

func (f *Follow) List(ctx context.Context, n int) ([]*Record, error) {
	out, _ := f.mem.List(ctx, n)
	if len(out) >= n {
		return out, nil
	}
	more, err := f.redis.List(ctx, n-len(out))
	if err != nil && !notThere(err) {
		return out, err
	}
	return slices.Concat(out, more), nil
}

func (f *Follow) Recent(ctx context.Context, owner string, n int) ([]*Record, error) {
	out, _ := f.mem.Recent(ctx, owner, n)
	more, err := f.redis.Recent(ctx, owner, n)
	if err != nil && !notThere(err) {
		return out, err
	}
	return slices.Concat(out, more), nil
}

// ListOwner pages through owner's tasks in both stores as one list in the
// order of their ids (tasks/list of 2025-11-25): a page of each, merged,
// so that a task kept in either appears exactly once.
func (f *Follow) ListOwner(ctx context.Context, owner, after string, n int) ([]*Record, bool, error) {
	out, moreMem, _ := f.mem.ListOwner(ctx, owner, after, n)
	more, moreRedis, err := f.redis.ListOwner(ctx, owner, after, n)
	if err != nil && !notThere(err) {
		return nil, false, err
	}
	all := slices.Concat(out, more)
	slices.SortFunc(all, func(a, b *Record) int { return strings.Compare(a.ID, b.ID) })
	all = slices.CompactFunc(all, func(a, b *Record) bool { return a.ID == b.ID })
	if len(all) > n {
		return all[:n], true, nil
	}
	return all, moreMem || moreRedis, nil
}

package tasks

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// The tasks of one caller, for the console's tasks view: it shows the
// page's caller its own tasks, as tasks/get would, and no one else's (tasks/list of
// 2025-11-25 pages them by id instead: OwnerLister, in store.go).

// RecentLister is a Store that lists the newest tasks of one owner: Memory,
// Redis and Follow are.
type RecentLister interface {
	Recent(ctx context.Context, owner string, n int) ([]*Record, error)
}

// Recent returns at most n of owner's tasks that have not expired,
// newest first, without their results (which may be megabytes each): a
// task whose replica stopped renewing its lease is shown failed, as the
// next tasks/get will record it. A store that cannot list by owner lists
// nothing.
func (m *Manager) Recent(ctx context.Context, owner string, n int) ([]*Record, error) {
	l, ok := m.store.(RecentLister)
	if !ok {
		return nil, errors.New("this task store cannot list a caller's tasks")
	}
	recs, err := l.Recent(ctx, owner, n)
	if err != nil {
		return nil, err
	}
	now := m.opts.Now()
	for _, r := range recs {
		r.Result, r.Inputs, r.Answers = nil, nil, nil
		expireLost(r, now)
	}
	slices.SortFunc(recs, func(a, b *Record) int { return cmp.Or(b.Created.Compare(a.Created), cmp.Compare(a.ID, b.ID)) })
	if len(recs) > n {
		recs = recs[:n]
	}
	return recs, nil
}

func (m *Memory) Recent(_ context.Context, owner string, n int) ([]*Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	out := []*Record{}
	for id := range m.byOwner[owner] {
		if m.expire(id, now) {
			continue
		}
		out = append(out, clone(m.byID[id]))
	}
	// Newest first before the cut, so that the n kept are the newest.
	slices.SortFunc(out, func(a, b *Record) int { return b.Created.Compare(a.Created) })
	if len(out) > n {
		out = out[:n]
	}
	return out, nil
}

// Recent reads owner's set of tasks by expiry (the latest to expire
// first: near enough to newest first) and the records it names.
func (s *Redis) Recent(ctx context.Context, owner string, n int) ([]*Record, error) {
	st := s.state()
	if st == nil {
		return nil, errNoState
	}
	_, all, _, _ := s.keys(st, owner, "")
	c := st.Client()
	now := strconv.FormatInt(s.now().UnixMilli(), 10)
	ids, err := c.ZRevRangeByScore(ctx, all, &redis.ZRangeBy{Min: "(" + now, Max: "+inf", Count: int64(n)}).Result()
	st.Observe(err)
	if err != nil || len(ids) == 0 {
		return []*Record{}, err
	}
	return s.records(ctx, st, ids, owner, false)
}

package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpd/mcpd/engine/sharedstate"
)

// Redis is a Store in the shared state, so that every replica answers for
// every task. A task is one JSON value (its key expires with the record);
// each owner has two sorted sets of its task ids, all of them by when they
// expire and those not ended by when their lease runs out (so that a task
// whose replica died stops counting against max_per_caller once its lease
// has run out), and one sorted set of every task serves List.
type Redis struct {
	state func() *sharedstate.Store // the current config's (reloads change it)
	now   func() time.Time
	// maxValue bounds a record read back: Redis is a peer, and a value
	// larger than any record mcpd writes is refused.
	maxValue int
}

// NewRedis returns a store in the shared state state returns (nil: none,
// and every operation fails). maxResult is the bound of a kept result
// (Options.MaxResultBytes; 0: the default).
func NewRedis(state func() *sharedstate.Store, maxResult int) *Redis {
	if maxResult <= 0 {
		maxResult = DefaultMaxResultBytes
	}
	return &Redis{state: state, now: time.Now, maxValue: 2*maxResult + 1<<20}
}

var errNoState = errors.New("no shared state (the server's state block is gone)")

func (s *Redis) keys(st *sharedstate.Store, owner, id string) (task, all, active, every string) {
	return st.Key("task", id), st.Key("tasks", "all", owner), st.Key("tasks", "active", owner), st.Key("tasks", "every")
}

// createScript adds a task unless its owner holds too many: KEYS task,
// all, active, every; ARGV now (ms), record, expires (ms), lease (ms),
// maxActive, maxAll, id.
var createScript = redis.NewScript(`
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[3]) >= tonumber(ARGV[5]) or redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[6]) then
  return 0
end
redis.call('SET', KEYS[1], ARGV[2], 'PXAT', ARGV[3])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[7])
redis.call('ZADD', KEYS[3], ARGV[4], ARGV[7])
redis.call('ZADD', KEYS[4], ARGV[3], ARGV[7])
redis.call('PEXPIREAT', KEYS[2], ARGV[3], 'GT')
redis.call('PEXPIREAT', KEYS[3], ARGV[3], 'GT')
return 1
`)

func (s *Redis) Create(ctx context.Context, r *Record, maxActive, maxAll int) error {
	st := s.state()
	if st == nil {
		return errNoState
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	task, all, active, every := s.keys(st, r.Owner, r.ID)
	n, err := createScript.Run(ctx, st.Client(), []string{task, all, active, every},
		s.now().UnixMilli(), b, r.Expires.UnixMilli(), r.Lease.UnixMilli(), maxActive, maxAll, r.ID).Int()
	st.Observe(err)
	if err != nil {
		return fmt.Errorf("creating a task in the shared state: %w", err)
	}
	if n == 0 {
		return ErrTooMany
	}
	return nil
}

func (s *Redis) Get(ctx context.Context, owner, id string) (*Record, error) {
	st := s.state()
	if st == nil {
		return nil, errNoState
	}
	task, _, _, _ := s.keys(st, owner, id)
	b, err := st.Client().Get(ctx, task).Bytes()
	if errors.Is(err, redis.Nil) {
		st.Observe(nil)
		return nil, ErrNotFound
	}
	st.Observe(err)
	if err != nil {
		return nil, fmt.Errorf("reading a task from the shared state: %w", err)
	}
	return s.decode(b, owner, id)
}

// decode reads a record Redis answered with, and checks that it is
// owner's task id: a task of another owner is not found.
func (s *Redis) decode(b []byte, owner, id string) (*Record, error) {
	if len(b) > s.maxValue {
		return nil, fmt.Errorf("the shared state answered a task of %d bytes, more than any mcpd writes", len(b))
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("the shared state answered a task mcpd cannot read: %w", err)
	}
	if r.ID != id || r.Owner != owner {
		return nil, ErrNotFound
	}
	return &r, nil
}

// records reads the tasks named by ids in one MGET, those of owner alone
// unless anyOwner, skipping the ones that expired meanwhile and those the
// shared state answered in a form mcpd never writes.
func (s *Redis) records(ctx context.Context, st *sharedstate.Store, ids []string, owner string, anyOwner bool) ([]*Record, error) {
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = st.Key("task", id)
	}
	vals, err := st.Client().MGet(ctx, keys...).Result()
	st.Observe(err)
	if err != nil {
		return nil, err
	}
	out := make([]*Record, 0, len(vals))
	for i, v := range vals {
		b, ok := v.(string)
		if !ok {
			continue // expired meanwhile
		}
		var r Record
		if len(b) > s.maxValue || json.Unmarshal([]byte(b), &r) != nil || r.ID != ids[i] || (!anyOwner && r.Owner != owner) {
			continue
		}
		out = append(out, &r)
	}
	return out, nil
}

// maxTries bounds the retries of an Update that another replica's write
// interrupted.
const maxTries = 8

func (s *Redis) Update(ctx context.Context, owner, id string, f func(*Record) bool) (*Record, error) {
	st := s.state()
	if st == nil {
		return nil, errNoState
	}
	task, all, active, every := s.keys(st, owner, id)
	var out *Record
	txf := func(tx *redis.Tx) error {
		b, err := tx.Get(ctx, task).Bytes()
		if errors.Is(err, redis.Nil) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		r, err := s.decode(b, owner, id)
		if err != nil {
			return err
		}
		out = r
		c := clone(r)
		if !f(c) {
			return nil
		}
		nb, err := json.Marshal(c)
		if err != nil {
			return err
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, task, nb, 0)
			p.PExpireAt(ctx, task, c.Expires)
			exp := strconv.FormatInt(c.Expires.UnixMilli(), 10)
			p.ZAdd(ctx, all, redis.Z{Score: float64(c.Expires.UnixMilli()), Member: id})
			p.ZAdd(ctx, every, redis.Z{Score: float64(c.Expires.UnixMilli()), Member: id})
			if c.Status.Terminal() {
				p.ZRem(ctx, active, id)
			} else {
				p.ZAdd(ctx, active, redis.Z{Score: float64(c.Lease.UnixMilli()), Member: id})
			}
			p.Do(ctx, "PEXPIREAT", all, exp, "GT")
			p.Do(ctx, "PEXPIREAT", active, exp, "GT")
			return nil
		})
		if err == nil {
			out = c
		}
		return err
	}
	for range maxTries {
		err := st.Client().Watch(ctx, txf, task)
		if errors.Is(err, redis.TxFailedErr) {
			continue
		}
		if errors.Is(err, ErrNotFound) {
			st.Observe(nil)
			return nil, ErrNotFound
		}
		st.Observe(err)
		if err != nil {
			return nil, fmt.Errorf("updating a task in the shared state: %w", err)
		}
		return out, nil
	}
	return nil, errors.New("updating a task in the shared state: too many concurrent writes")
}

func (s *Redis) List(ctx context.Context, n int) ([]*Record, error) {
	st := s.state()
	if st == nil {
		return nil, errNoState
	}
	every := st.Key("tasks", "every")
	now := strconv.FormatInt(s.now().UnixMilli(), 10)
	c := st.Client()
	c.ZRemRangeByScore(ctx, every, "-inf", now)
	ids, err := c.ZRangeByScore(ctx, every, &redis.ZRangeBy{Min: "(" + now, Max: "+inf", Count: int64(n)}).Result()
	st.Observe(err)
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	return s.records(ctx, st, ids, "", true)
}

func (s *Redis) ListOwner(ctx context.Context, owner, after string, n int) ([]*Record, bool, error) {
	st := s.state()
	if st == nil {
		return nil, false, errNoState
	}
	_, all, _, _ := s.keys(st, owner, "")
	now := strconv.FormatInt(s.now().UnixMilli(), 10)
	c := st.Client()
	// At most MaxKeptPerCaller ids: the owner's set is bounded by Create.
	ids, err := c.ZRangeByScore(ctx, all, &redis.ZRangeBy{Min: "(" + now, Max: "+inf"}).Result()
	st.Observe(err)
	if err != nil {
		return nil, false, fmt.Errorf("listing tasks in the shared state: %w", err)
	}
	ids, more := page(ids, after, n)
	if len(ids) == 0 {
		return nil, more, nil
	}
	out, err := s.records(ctx, st, ids, owner, false)
	if err != nil {
		return nil, false, fmt.Errorf("listing tasks in the shared state: %w", err)
	}
	return out, more, nil
}

package sharedstate

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Get returns the value of a string key, or redis.Nil when there is none.
// The reads of concurrent calls are batched into one MGET (see batches).
// Redis's failures are reported to Observe, as Take's are.
func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	req := &getReq{ctx: ctx, key: key, done: make(chan getRes, 1)}
	r, err := enqueue(ctx, s, s.gets, req, req.done)
	if err != nil {
		return nil, err
	}
	if !r.found {
		return nil, redis.Nil
	}
	return r.val, nil
}

type getReq struct {
	ctx  context.Context // the caller's: a read cancelled before it is sent is dropped
	key  string
	done chan getRes
}

func (r *getReq) caller() context.Context { return r.ctx }
func (r *getReq) fail(err error)          { r.done <- getRes{err: err} }

type getRes struct {
	val   []byte
	found bool
	err   error
}

func (r getRes) failure() error { return r.err }

// runGets reads one batch with one MGET.
func (s *Store) runGets(batch []*getReq) {
	ctx, cancel := s.batchCtx()
	defer cancel()
	keys := make([]string, len(batch))
	for i, r := range batch {
		keys[i] = r.key
	}
	vals, err := s.client.MGet(ctx, keys...).Result()
	if err == nil && len(vals) != len(batch) {
		err = fmt.Errorf("MGET answered %d values for %d keys", len(vals), len(batch))
	}
	for i, r := range batch {
		if err != nil {
			r.fail(err)
			continue
		}
		switch v := vals[i].(type) {
		case nil:
			r.done <- getRes{}
		case string:
			r.done <- getRes{val: []byte(v), found: true}
		default:
			r.fail(fmt.Errorf("MGET answered %T for key %s", v, r.key))
		}
	}
}

package sharedstate

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Under load, what costs a replica CPU in a Redis round trip is not the
// command but its system calls, wake-ups and the client's encoding: the
// rate-limit takes (Take) and the cache's reads (Get) of concurrent calls
// are therefore sent in batches, one command per batch. One goroutine per
// kind sends whatever has queued while the previous batch was in flight
// as the next one: a call that finds the line empty goes at once, so
// batching adds no wait, and under load many calls share one round trip.

// maxBatch bounds one batch.
const maxBatch = 128

// batchReq is one caller's request in a batch, and batchRes its answer.
type batchReq interface {
	caller() context.Context // a request whose caller has gone is not sent
	fail(err error)          // answers the request with err
}

type batchRes interface {
	failure() error // the batch's error, if it failed
}

// batches runs batches of what queue receives with run, one batch at a
// time, until the store closes. Requests whose caller has gone while they
// waited are answered with its error, not sent.
func batches[R batchReq](s *Store, queue <-chan R, run func([]R)) {
	defer s.wg.Done()
	batch := make([]R, 0, maxBatch)
	for {
		batch = batch[:0]
		select {
		case <-s.stop:
			return
		case r := <-queue:
			batch = append(batch, r)
		}
	more:
		for len(batch) < maxBatch {
			select {
			case r := <-queue:
				batch = append(batch, r)
			default:
				break more
			}
		}
		if batch = live(s, batch); len(batch) > 0 {
			run(batch)
		}
	}
}

// live answers the requests whose caller has gone, and every request
// while the store is down (a batch before them found Redis not answering:
// they would wait for it too), and returns the others.
func live[R batchReq](s *Store, batch []R) []R {
	up := s.Healthy()
	out := batch[:0]
	for _, r := range batch {
		if err := r.caller().Err(); err != nil {
			r.fail(err)
			continue
		}
		if !up {
			r.fail(ErrDown)
			continue
		}
		out = append(out, r)
	}
	return out
}

// ErrDown is an operation not sent because the store is known to be down.
var ErrDown = errors.New("the shared state (Redis) is down")

// enqueue puts r in queue and waits for its answer on done (buffered: the
// batcher never waits for a caller). A failed batch is reported to
// Observe, unless the caller's own end failed it; a caller whose budget
// (see Budget) was spent waiting reports a timeout, as the client's own
// read timeout would: the batch it waits for is not answered in time, and
// the next calls should not wait for it too.
func enqueue[R batchReq, A batchRes](ctx context.Context, s *Store, queue chan<- R, r R, done <-chan A) (A, error) {
	var zero A
	if err := ctx.Err(); err != nil {
		return zero, err // not tried: says nothing about Redis
	}
	select {
	case queue <- r:
	case <-ctx.Done():
		return zero, s.ended(ctx)
	case <-s.stop:
		return zero, redis.ErrClosed
	}
	select {
	case a := <-done:
		if err := a.failure(); err != nil {
			if ctx.Err() == nil && !errors.Is(err, ErrDown) {
				s.Observe(err)
			}
			return a, err
		}
		return a, nil
	case <-ctx.Done():
		return zero, s.ended(ctx)
	case <-s.stop:
		return zero, redis.ErrClosed
	}
}

// ended is the error of an operation whose ctx ended before Redis
// answered: a timeout, reported to Observe, when the call's budget was
// spent; the caller's cancellation otherwise.
func (s *Store) ended(ctx context.Context) error {
	if budgetSpent(ctx) {
		err := fmt.Errorf("no answer within the call's state timeout: %w", context.DeadlineExceeded)
		s.Observe(err)
		return err
	}
	return ctx.Err()
}

// batchCtx bounds one batch's round trip.
func (s *Store) batchCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), s.settings.Options.WriteTimeout+s.settings.Options.ReadTimeout)
}

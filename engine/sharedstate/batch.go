package sharedstate

import (
	"context"

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

// batches runs batches of what queue receives with run, one batch at a
// time, until the store closes.
func batches[R any](s *Store, queue <-chan R, run func([]R)) {
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
		run(batch)
	}
}

// enqueue puts r in queue and waits for its answer on done (buffered: the
// batcher never waits for a caller).
func enqueue[R any, A any](ctx context.Context, s *Store, queue chan<- R, r R, done <-chan A) (A, error) {
	var zero A
	select {
	case queue <- r:
	case <-ctx.Done():
		return zero, ctx.Err()
	case <-s.stop:
		return zero, redis.ErrClosed
	}
	select {
	case a := <-done:
		return a, nil
	case <-ctx.Done():
		return zero, ctx.Err()
	case <-s.stop:
		return zero, redis.ErrClosed
	}
}

// batchCtx bounds one batch's round trip.
func (s *Store) batchCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), s.settings.Options.WriteTimeout+s.settings.Options.ReadTimeout)
}

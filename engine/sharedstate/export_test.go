package sharedstate

import (
	"context"
	"slices"
)

// StopRenewing stops a lease's renewals without releasing it, as a killed
// holder does.
func (l *Lease) StopRenewing() {
	close(l.stop)
	<-l.done
}

// TakeBatch decides takes as one batch (one script run), as the batcher
// does under load, and returns each one's refused bucket (-1: admitted).
func (s *Store) TakeBatch(ctx context.Context, takes ...[]Bucket) ([]int, error) {
	batch := make([]*takeReq, len(takes))
	for i, bs := range takes {
		batch[i] = s.newTake(ctx, bs)
	}
	if l := live(s, slices.Clone(batch)); len(l) > 0 {
		s.runTakes(l)
	}
	out := make([]int, len(batch))
	for i, r := range batch {
		res := <-r.done
		if res.err != nil {
			return nil, res.err
		}
		out[i] = -1
		if !res.admitted {
			out[i] = res.refused
		}
	}
	return out, nil
}

// Reserved is how many tokens of key this replica holds.
func (s *Store) Reserved(key string) int {
	s.res.mu.Lock()
	defer s.res.mu.Unlock()
	if h := s.res.m[key]; h != nil {
		return h.tokens
	}
	return 0
}

// ReserveTTL is how long reserved tokens are held.
const ReserveTTL = reserveTTL

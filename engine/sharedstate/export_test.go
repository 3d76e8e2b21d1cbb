package sharedstate

import "context"

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
		r := &takeReq{ctx: ctx, done: make(chan takeRes, 1)}
		for _, b := range bs {
			r.keys = append(r.keys, b.Key)
			r.args = append(r.args, max(b.Interval.Microseconds(), 1), max(b.Burst, 1))
		}
		batch[i] = r
	}
	s.runTakes(batch)
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

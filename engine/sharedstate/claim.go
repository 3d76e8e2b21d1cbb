package sharedstate

import (
	"context"
	"fmt"
	"time"
)

// Claim marks key as claimed for ttl, across every replica: true for the
// first claim, false when another call (on any replica) claimed it
// already. One SET NX PX: Redis decides, atomically. An error means Redis
// did not answer (see Observe): the caller applies its fail mode.
func (s *Store) Claim(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err // not tried: says nothing about Redis
	}
	ok, err := s.client.SetNX(ctx, key, 1, max(ttl, time.Second)).Result()
	if err != nil {
		if budgetSpent(ctx) {
			err = fmt.Errorf("no answer within the call's state timeout: %w", context.DeadlineExceeded)
		}
		s.Observe(err)
		return false, err
	}
	return ok, nil
}

package serve

import (
	"context"
	"sync"
	"testing"
	"time"
)

// Reservations that time out while budget is being granted to them must
// neither leak budget nor be granted twice: after many calls that take,
// wait, time out and give back at once, nothing is held or waiting.
func TestBudgetNoLeak(t *testing.T) {
	b := newBudget(10, 400)
	var wg sync.WaitGroup
	for i := range 400 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := int64(1 + i%7)
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i%5)*time.Millisecond)
			defer cancel()
			if b.acquire(ctx, n, true) == nil {
				time.Sleep(time.Duration(i%3) * time.Millisecond)
				b.release(n)
			}
		}()
	}
	wg.Wait()
	if b.used != 0 || b.waiters.Len() != 0 {
		t.Fatalf("after all calls: %d bytes held, %d waiting; want none", b.used, b.waiters.Len())
	}
}

// A reservation that fits what is free is granted at once, ahead of larger
// ones waiting, and the waiters are granted oldest first as budget comes
// back; at most maxWaiters wait.
func TestBudgetOrder(t *testing.T) {
	b := newBudget(10, 4) // two may wait
	ctx := context.Background()
	if err := b.acquire(ctx, 8, true); err != nil {
		t.Fatal(err)
	}
	granted := make(chan int64, 2)
	for i, n := range []int64{6, 5} {
		go func() {
			if b.acquire(ctx, n, true) == nil {
				granted <- n
			}
		}()
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
			b.mu.Lock()
			w := b.waiters.Len()
			b.mu.Unlock()
			if w == i+1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the waiter never queued")
			}
		}
	}
	third, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := b.acquire(third, 9, true); err != errWaitersFull {
		t.Fatalf("a third waiter: %v, want errWaitersFull", err)
	}
	if !b.tryAcquire(2) {
		t.Fatal("2 bytes that fit were not granted ahead of the waiters")
	}
	b.release(8) // 2 held: 6 fits, then 5 does not
	if n := <-granted; n != 6 {
		t.Fatalf("first granted %d, want the oldest (6)", n)
	}
	b.release(2) // 6 held: 5 does not fit yet
	select {
	case n := <-granted:
		t.Fatalf("granted %d with only 4 free", n)
	case <-time.After(20 * time.Millisecond):
	}
	b.release(6)
	if n := <-granted; n != 5 {
		t.Fatalf("then granted %d, want 5", n)
	}
	b.release(5)
	if b.used != 0 {
		t.Fatalf("%d bytes still held", b.used)
	}
}

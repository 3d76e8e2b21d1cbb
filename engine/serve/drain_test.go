package serve

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A request's context is cancelled by a drain's abort and by the end of its
// handler, whether or not anything asked for Done before.
func TestReqCtx(t *testing.T) {
	tests := []struct {
		name      string
		doneFirst bool // Done asked before the event
		abort     bool // the event: abortAll (else end)
		wantCause error
	}{
		{"abort, Done asked before", true, true, errShuttingDown},
		{"abort, Done asked after", false, true, errShuttingDown},
		{"end, Done asked before", true, false, context.Canceled},
		{"end, Done asked after", false, false, context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newDrain()
			type key struct{}
			parent := context.WithValue(context.Background(), key{}, "v")
			c := d.begin(parent)
			if c.Err() != nil || c.Value(key{}) != "v" {
				t.Fatalf("fresh context: Err %v, Value %v", c.Err(), c.Value(key{}))
			}
			var child context.Context
			if tt.doneFirst {
				c.Done()
				var cancel context.CancelFunc
				child, cancel = context.WithCancel(c)
				defer cancel()
			}
			if tt.abort {
				d.abortAll()
			} else {
				d.end(c)
			}
			select {
			case <-c.Done():
			case <-time.After(5 * time.Second):
				t.Fatal("Done not closed")
			}
			if !errors.Is(c.Err(), context.Canceled) {
				t.Errorf("Err = %v, want context.Canceled", c.Err())
			}
			if got := context.Cause(c); !errors.Is(got, tt.wantCause) {
				t.Errorf("Cause = %v, want %v", got, tt.wantCause)
			}
			if c.Value(key{}) != "v" {
				t.Errorf("the parent's values are lost")
			}
			if child != nil && child.Err() == nil {
				t.Error("a context derived before the event is not cancelled")
			}
			if tt.abort {
				d.end(c)
			}
			if n := len(d.cancels); n != 0 {
				t.Errorf("%d cancel funcs left registered", n)
			}
			if d.busy != 0 {
				t.Errorf("busy = %d after end", d.busy)
			}
		})
	}
}

// The parent's cancellation reaches a request's context.
func TestReqCtxParentCancelled(t *testing.T) {
	d := newDrain()
	parent, cancel := context.WithCancel(context.Background())
	c := d.begin(parent)
	defer d.end(c)
	done := c.Done()
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Done not closed when the parent was cancelled")
	}
	if !errors.Is(c.Err(), context.Canceled) {
		t.Errorf("Err = %v", c.Err())
	}
}

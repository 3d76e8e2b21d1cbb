package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/snapshot"
	"github.com/mcpd/mcpd/engine/tasks"
)

// Tasks count against --max-inflight and the output budget, as plain
// calls do: a task runs the same backends (a process, a query, a request)
// and builds the same result, so a caller that could start tasks past
// those bounds could start unbounded concurrent work through them.
//
// A task round (the call's run until it completes or asks its user)
// holds one slot of Server.running, the slots plain calls take. The
// tools/call that creates the task hands it the slot it took, so a task
// is created exactly when a plain call would run. Because a task runs for
// minutes where a plain call runs for seconds, tasks may hold at most half
// of the slots (taskShare): however many tasks callers start, plain calls
// and the requests that poll, answer and cancel tasks (which take no slot)
// still run. A tools/call that would make a task when that share is full
// is refused at once with the busy error plain calls get past
// --max-inflight (-32000, "retry shortly"), rather than queued: a task
// created but not running would hold its client's max_per_caller and poll
// traffic for nothing, and the caller can better decide whether to wait.
// A later round of a task (after its user answered) is not refused: the
// task exists, so it waits for slots, saying so in its statusMessage,
// until they are free or the task is cancelled.
//
// A round also reserves output budget as a plain call does (reserveOutput,
// and chargeResult for a result its result block built), given back when
// the round's result has been encoded into the task's record; a round that
// gets no budget in time completes with the same busy tool error a plain
// call gets.

// taskShare bounds the task rounds running at once: half of
// Options.MaxInflight (at least one); nil when there is no cap.
type taskShare struct {
	once  sync.Once
	slots chan struct{}
}

func (s *Server) taskSlots() chan struct{} {
	s.taskShare.once.Do(func() {
		if s.opts.MaxInflight > 0 {
			s.taskShare.slots = make(chan struct{}, max(s.opts.MaxInflight/2, 1))
		}
	})
	return s.taskShare.slots
}

// taskSlot is what a task's first round was handed by the tools/call
// that created it.
type taskSlot struct {
	running bool // a slot of Server.running
	share   bool // a slot of taskSlots
}

// takeTaskSlot moves the slot of Server.running that hold holds to a task
// about to be created, and takes one of the tasks' share; it returns the
// busy error when the share is full. giveBackTaskSlot undoes it when the
// task was not created.
func (s *Server) takeTaskSlot(hold *callHold) (*taskSlot, error) {
	ts := &taskSlot{}
	if share := s.taskSlots(); share != nil {
		select {
		case share <- struct{}{}:
			ts.share = true
		default:
			return nil, &jsonrpc.Error{Code: codeServerBusy, Message: fmt.Sprintf("the server is busy: %d tasks are running, as many as --max-inflight (%d) lets tasks hold (half of it); retry shortly, or cancel a task of yours", cap(share), s.opts.MaxInflight)}
		}
	}
	if hold != nil && hold.running {
		hold.running, ts.running = false, true
	}
	return ts, nil
}

func (s *Server) giveBackTaskSlot(ts *taskSlot, hold *callHold) {
	if ts.running && hold != nil {
		hold.running, ts.running = true, false
	}
	s.releaseTaskSlot(ts)
}

func (s *Server) releaseTaskSlot(ts *taskSlot) {
	if ts.running {
		s.release()
		ts.running = false
	}
	if ts.share {
		<-s.taskSlots()
		ts.share = false
	}
}

// slotted wraps a task's run so that each round holds its slots: the
// first the ones ts holds, each later one slots it waits for.
func (s *Server) slotted(ts *taskSlot, run tasks.Run) tasks.Run {
	return func(ctx context.Context, answers map[string]json.RawMessage, state string) tasks.Outcome {
		if !ts.running && !ts.share {
			if err := s.waitTaskSlot(ctx, ts); err != nil {
				s.releaseTaskSlot(ts)
				return tasks.Outcome{Err: &tasks.Error{Code: jsonrpc.CodeInternalError, Message: "the task stopped while waiting for a free slot: " + err.Error()}}
			}
		}
		defer s.releaseTaskSlot(ts)
		return run(ctx, answers, state)
	}
}

// waitTaskSlot takes the slots a later round of a task needs, waiting as
// long as ctx lasts.
func (s *Server) waitTaskSlot(ctx context.Context, ts *taskSlot) error {
	share := s.taskSlots()
	if share == nil {
		return nil
	}
	tasks.Report(ctx, fmt.Sprintf("waiting for a free slot (--max-inflight %d)", s.opts.MaxInflight), true)
	select {
	case share <- struct{}{}:
		ts.share = true
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	select {
	case s.running <- struct{}{}:
		ts.running = true
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	tasks.Report(ctx, "", true)
	return nil
}

// taskCall is t.Call for a task's round, charged to the output budget as
// a plain call is; the caller defers release, once it has encoded the
// result.
func (s *Server) taskCall(ctx context.Context, t *snapshot.Tool, cr *snapshot.CallRequest) (res *mcp.CallToolResult, release func(), err error) {
	reserved, refused := s.reserveOutput(ctx, t)
	release = func() {
		if reserved > 0 {
			s.budget.release(reserved)
		}
	}
	if refused != nil {
		return refused, release, nil
	}
	res, err = t.Call(ctx, cr)
	if err != nil {
		return nil, release, err
	}
	if res.InputRequests == nil && t.BuildsResult() {
		if reserved, refused = s.chargeResult(ctx, t, res, reserved); refused != nil {
			return refused, release, nil
		}
	}
	return res, release, nil
}

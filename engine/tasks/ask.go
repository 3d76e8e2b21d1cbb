package tasks

import (
	"context"
	"encoding/json"
	"errors"
)

// Ask puts questions to the client of the task whose call ctx is, while
// the call goes on: the task is input_required with them as its inputs
// until every one is answered (Answer), and Ask returns the answers. It is
// for a call that cannot end its round and be run again with the answers
// (Run's rounds), such as one that follows a task of its backend. It fails
// outside a task, when the task ends first (cancelled), and when no
// answers come within the task's TTL (at least a minute).
func Ask(ctx context.Context, inputs map[string]json.RawMessage) (map[string]json.RawMessage, error) {
	h, _ := ctx.Value(handleKey{}).(*handle)
	if h == nil {
		return nil, errors.New("not a task's call: nobody to ask")
	}
	m := h.m
	m.mu.Lock()
	l := m.runs[h.id]
	m.mu.Unlock()
	if l == nil {
		return nil, errors.New("the task is not running here")
	}
	r, err := m.store.Get(context.WithoutCancel(ctx), h.owner, h.id)
	if err != nil {
		return nil, err
	}
	if !m.ask(ctx, r, inputs) {
		return nil, errors.New("the task ended before its questions were asked")
	}
	answers, stop := m.awaitAnswers(ctx, l, r)
	switch {
	case answers != nil:
		return answers, nil
	case stop != nil:
		return nil, errors.New(stop.Message)
	case ctx.Err() != nil:
		return nil, ctx.Err()
	}
	return nil, errors.New("the task ended while it waited for answers")
}

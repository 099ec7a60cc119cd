package chain_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker"
	"github.com/srebreaker/srebreaker/criticality"
	"github.com/srebreaker/srebreaker/internal/chain"
)

// journal records what is done to the promises of a resumable call.
type journal struct {
	mu    sync.Mutex
	lines []string
	next  int
}

func (j *journal) add(format string, args ...any) {
	j.mu.Lock()
	j.lines = append(j.lines, fmt.Sprintf(format, args...))
	j.mu.Unlock()
}

func (j *journal) read() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]string(nil), j.lines...)
}

// resumable is a chain.Resumer that writes what is done to it in j.
type resumable struct {
	j  *journal
	id int
}

func (p resumable) Accept()              { p.j.add("%d accept", p.id) }
func (p resumable) Reject(reason string) { p.j.add("%d reject %s", p.id, reason) }
func (p resumable) Ignore()              { p.j.add("%d ignore", p.id) }

func (p resumable) RejectOverloaded(reason string) { p.j.add("%d reject overloaded %s", p.id, reason) }

func (p resumable) Resumed(chain.Resuming) srebreaker.Promise {
	p.j.mu.Lock()
	p.j.next++
	n := p.j.next
	p.j.mu.Unlock()
	p.j.add("%d resumed as %d", p.id, n)
	return resumable{p.j, n}
}

func (p resumable) Answered() srebreaker.Promise {
	p.j.add("%d answered", p.id)
	return answered{p}
}

// answered is the promise resumable's Answered returns.
type answered struct{ p resumable }

func (a answered) Accept()              { a.p.j.add("%d accept answered", a.p.id) }
func (a answered) Reject(reason string) { a.p.j.add("%d reject answered %s", a.p.id, reason) }

// plain is a promise that is no chain.Resumer.
type plain struct{}

func (plain) Accept()       {}
func (plain) Reject(string) {}

func watched(t *testing.T) (context.Context, srebreaker.Promise, *journal) {
	t.Helper()
	ctx, m := chain.With(context.Background(), criticality.Default)
	j := new(journal)
	p := m.Watch(resumable{j: j})
	require.Same(t, m, p, "a Resumer is recorded through the Mark")
	return ctx, p, j
}

func TestMark_Watch_leavesOtherPromisesBe(t *testing.T) {
	ctx, m := chain.With(context.Background(), criticality.Default)
	assert.Equal(t, plain{}, m.Watch(plain{}), "a promise that is no Resumer (a probe's) is recorded on as it is")
	assert.Nil(t, chain.Leave(ctx), "nor does it make the request leave anything")
	var none *chain.Mark
	assert.Equal(t, plain{}, none.Watch(plain{}))
}

func TestMark_Watch_givesThePromiseUpWhileAGuardedCallIsOut(t *testing.T) {
	ctx, p, j := watched(t)
	first := chain.Leave(ctx)
	require.NotNil(t, first)
	second := chain.Leave(ctx) // two at once: a fan-out
	assert.Equal(t, []string{"0 ignore"}, j.read(), "the first call out gives the promise up")
	first.Return()
	assert.Equal(t, []string{"0 ignore"}, j.read(), "one call is still out")
	second.Return()
	assert.Equal(t, []string{"0 ignore", "0 resumed as 1"}, j.read(), "the last back takes a new one")
	chain.Leave(ctx).Return()
	p.Accept()
	assert.Equal(t, []string{"0 ignore", "0 resumed as 1", "1 ignore", "1 resumed as 2", "2 accept"}, j.read())
}

func TestMark_Watch_recordedWhileAway(t *testing.T) {
	for _, tc := range []struct {
		record func(srebreaker.Promise)
		want   string
	}{
		{func(p srebreaker.Promise) { p.Accept() }, "1 accept"},
		{func(p srebreaker.Promise) { p.Reject("boom") }, "1 reject boom"},
		{func(p srebreaker.Promise) { srebreaker.RejectOverloaded(p, "full") }, "1 reject overloaded full"},
		{func(p srebreaker.Promise) { srebreaker.Ignore(p) }, "1 ignore"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			ctx, p, j := watched(t)
			away := chain.Leave(ctx) // a goroutine of the handler's, still out as it returns
			tc.record(p)
			away.Return()
			chain.Leave(ctx).Return()
			assert.Equal(t, []string{"0 ignore", "0 resumed as 1", tc.want}, j.read(),
				"taken again to be recorded, once; left be after")
		})
	}
}

func TestMark_Watch_answeredWhileAway(t *testing.T) {
	ctx, p, j := watched(t)
	away := chain.Leave(ctx)
	a := p.(interface{ Answered() srebreaker.Promise }).Answered()
	away.Return()
	chain.Leave(ctx).Return()
	a.Accept()
	assert.Equal(t, []string{"0 ignore", "0 resumed as 1", "1 answered", "1 accept answered"}, j.read(),
		"an answered call is followed no more")
}

func TestMark_Return_withoutALeave(t *testing.T) {
	ctx, p, j := watched(t)
	chain.From(ctx).Return()
	p.Accept()
	assert.Equal(t, []string{"0 accept"}, j.read())
}

func TestMark_Watch_concurrent(t *testing.T) {
	ctx, p, j := watched(t)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				chain.Leave(ctx).Return()
			}
		}()
	}
	wg.Wait()
	p.Accept()
	lines := j.read()
	ignores, resumes := 0, 0
	for _, l := range lines {
		if strings.HasSuffix(l, " ignore") {
			ignores++
		}
		if strings.Contains(l, " resumed as ") {
			resumes++
		}
	}
	assert.Equal(t, fmt.Sprintf("%d accept", j.next), lines[len(lines)-1], "recorded once, on the last promise")
	assert.Equal(t, ignores, resumes, "every promise given up is taken again")
	assert.Positive(t, ignores)
}

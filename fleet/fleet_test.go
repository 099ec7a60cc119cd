package fleet_test

import (
	"context"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/criticality"
	"github.com/srebreaker/srebreaker/fleet"
	"github.com/srebreaker/srebreaker/proba"
)

// span is a bucket at the default window: 2 s over 20 buckets.
const span = breaker.DefaultWindow / 20

// start is when the tests' clocks start: on the grid, so that the
// breaker's bucket n is bucket start/span + n of the fleet's.
var start = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// newBreaker returns a breaker on a mock clock with a seeded random
// source, and its fleet link.
func newBreaker(t *testing.T, opts ...breaker.Option) (breaker.Breaker, *fleet.Member, *clock.Mock) {
	t.Helper()
	m := clock.NewMock()
	m.Set(start)
	b, err := breaker.New(append([]breaker.Option{
		breaker.WithName("test"), breaker.WithClock(m), breaker.WithProba(proba.NewSeeded(1)),
	}, opts...)...)
	require.NoError(t, err)
	f, ok := fleet.Of(b)
	require.True(t, ok)
	return b, f, m
}

// fail makes n calls that fail, if admitted.
func fail(t *testing.T, b breaker.Breaker, n int) {
	t.Helper()
	for range n {
		if p, err := b.Allow(); err == nil {
			p.Reject("boom")
		}
	}
}

// succeed makes n calls that succeed, if admitted.
func succeed(t *testing.T, b breaker.Breaker, n int) {
	t.Helper()
	for range n {
		if p, err := b.Allow(); err == nil {
			p.Accept()
		}
	}
}

func dropProbability(t *testing.T, b breaker.Breaker) float64 {
	t.Helper()
	s := b.Stats()
	return s.DropProbability
}

// othersAt returns a history on f's grid whose buckets, oldest first,
// end with the breaker's newest finished bucket (the bucket before its
// live one, the newest of its history).
func othersAt(f *fleet.Member, buckets ...fleet.Bucket) fleet.History {
	own := f.History()
	return fleet.History{Span: own.Span, Size: own.Size, Newest: own.Newest - 1, Buckets: buckets}
}

// failures returns n buckets of k failures each.
func failures(n int, k int64) []fleet.Bucket {
	out := make([]fleet.Bucket, n)
	for i := range out {
		out[i] = fleet.Bucket{Failures: k}
	}
	return out
}

func TestMember_History_ownBuckets(t *testing.T) {
	b, f, mock := newBreaker(t)
	assert.Equal(t, "test", f.Name())
	assert.Equal(t, breaker.DefaultWindow, f.Window())
	first := start.UnixNano() / int64(span)
	assert.Equal(t, fleet.History{Span: span, Size: 20, Newest: first}, f.History(),
		"nothing yet: the live bucket, empty, is left out")

	succeed(t, b, 3)
	fail(t, b, 2)
	mock.Add(span)
	fail(t, b, 1)
	mock.Add(2 * span)
	fail(t, b, 1)
	assert.Equal(t, fleet.History{Span: span, Size: 20, Newest: first + 3,
		Buckets: []fleet.Bucket{{Successes: 3, Failures: 2}, {Failures: 1}, {}, {Failures: 1}}}, f.History(),
		"the finished buckets, then the live one as it stands")

	mock.Add(2 * breaker.DefaultWindow)
	h := f.History()
	assert.Equal(t, first+3+40, h.Newest)
	assert.Empty(t, h.Buckets, "the window's buckets held nothing: left out")
	assert.Equal(t, []fleet.Bucket{{Successes: 3, Failures: 4}}, h.Blocks,
		"older buckets in blocks of a window, for reading back on light traffic; empty ones left out")
	assert.Equal(t, first/20, h.NewestBlock)
}

// A breaker that starts between two buckets of the grid publishes each of
// its buckets as the nearest of the grid.
func TestMember_History_nearestBucketOfTheGrid(t *testing.T) {
	for _, tc := range []struct {
		name  string
		after time.Duration
		shift int64
	}{{"a third of a bucket after", span / 3, 0}, {"two thirds after", 2 * span / 3, 1}} {
		t.Run(tc.name, func(t *testing.T) {
			m := clock.NewMock()
			m.Set(start.Add(tc.after))
			b := breaker.MustNew(breaker.WithClock(m))
			f, _ := fleet.Of(b)
			succeed(t, b, 1)
			m.Add(span)
			assert.Equal(t, start.UnixNano()/int64(span)+1+tc.shift, f.History().Newest, "the live bucket")
		})
	}
}

func TestMember_SetOthers_shedsOnTheFleetsEvidence(t *testing.T) {
	b, f, mock := newBreaker(t, breaker.WithPlainFormula())
	mock.Add(span)
	fail(t, b, 2)
	assert.Equal(t, 0.0, dropProbability(t, b), "2 failures alone are within protection")

	require.NoError(t, f.SetOthers(othersAt(f, fleet.Bucket{Failures: 40})))
	// (42 − 5 − 1.5·0) / (42 + 1): protection applies once, to the fleet.
	assert.InDelta(t, 37.0/43, dropProbability(t, b), 1e-12)

	f.ClearOthers()
	assert.Equal(t, 0.0, dropProbability(t, b), "cleared: the breaker's own history alone")
}

func TestMember_SetOthers_ownEvidenceOutweighsAHealthyFleet(t *testing.T) {
	b, f, mock := newBreaker(t, breaker.WithPlainFormula())
	mock.Add(span)
	fail(t, b, 20)
	own := dropProbability(t, b)
	require.Greater(t, own, 0.5)

	require.NoError(t, f.SetOthers(othersAt(f, fleet.Bucket{Successes: 1000})))
	assert.InDelta(t, own, dropProbability(t, b), 1e-12, "the higher of the two probabilities")
}

func TestMember_SetOthers_healthyFleetDropsNothingForAHealthyProcess(t *testing.T) {
	b, f, mock := newBreaker(t)
	mock.Add(span)
	succeed(t, b, 10)
	require.NoError(t, f.SetOthers(othersAt(f, fleet.Bucket{Successes: 500, Failures: 5})))
	assert.Equal(t, 0.0, dropProbability(t, b))
	p, err := b.Allow()
	require.NoError(t, err)
	p.Accept()
}

func TestMember_SetOthers_staleAfterAWindow(t *testing.T) {
	b, f, mock := newBreaker(t, breaker.WithPlainFormula())
	mock.Add(span)
	fail(t, b, 1)
	require.NoError(t, f.SetOthers(othersAt(f, fleet.Bucket{Failures: 100})))
	assert.Greater(t, dropProbability(t, b), 0.9)

	mock.Add(breaker.DefaultWindow - 2*span)
	assert.Greater(t, dropProbability(t, b), 0.9, "the others' bucket is still in the window")
	mock.Add(span)
	assert.Equal(t, 0.0, dropProbability(t, b),
		"it left the window with the breaker's own bucket of its time: the window holds no failure")
}

func TestMember_SetOthers_staleWhenNotRenewed(t *testing.T) {
	b, f, mock := newBreaker(t)
	mock.Add(breaker.DefaultWindow)
	// The others' older calls failed: a breaker on light traffic reads
	// back for them.
	own := f.History()
	require.NoError(t, f.SetOthers(fleet.History{Span: own.Span, Size: own.Size, Newest: own.Newest,
		NewestBlock: own.Newest/20 - 1, Blocks: []fleet.Bucket{{Failures: 30}}}))
	mock.Add(breaker.DefaultWindow)
	fail(t, b, 1)
	assert.Greater(t, dropProbability(t, b), 0.0, "a window after SetOthers: still used")
	mock.Add(time.Millisecond)
	assert.Equal(t, 0.0, dropProbability(t, b), "not renewed within a window: the breaker decides alone")
}

func TestMember_SetOthers_recentRunsAddUp(t *testing.T) {
	b, f, mock := newBreaker(t) // trust in recent buckets is on by default
	mock.Add(4 * span)
	require.NoError(t, f.SetOthers(othersAt(f,
		fleet.Bucket{Successes: 100}, fleet.Bucket{Failures: 10}, fleet.Bucket{Failures: 10}, fleet.Bucket{Failures: 10})))
	fail(t, b, 1)
	// The fleet's newest buckets hold only failures, more than protection:
	// older successes are set aside. Without the run, 100 successes would
	// outweigh 31 failures. 31 are more than twice protection, which no
	// longer applies: 31 / 32, to the power 1/1.5.
	assert.InDelta(t, 0.9791, dropProbability(t, b), 1e-4)
}

func TestMember_SetOthers_aFleetDownForAWindowLosesProtection(t *testing.T) {
	b, f, mock := newBreaker(t)
	mock.Add(30 * span)
	fail(t, b, 1)
	require.NoError(t, f.SetOthers(othersAt(f, failures(3, 2)...)))
	withProtection := dropProbability(t, b)
	require.Greater(t, withProtection, 0.0)
	require.NoError(t, f.SetOthers(othersAt(f, failures(29, 1)...)))
	assert.Greater(t, dropProbability(t, b), withProtection,
		"the fleet's failing buckets span more than a window: protection no longer applies")
}

// The others' bucket of the breaker's live one's time, published while
// it was theirs, counts with the breaker's live bucket.
func TestMember_SetOthers_theOthersLiveBucket(t *testing.T) {
	b, f, mock := newBreaker(t, breaker.WithPlainFormula())
	mock.Add(span)
	fail(t, b, 1)
	own := f.History()
	require.NoError(t, f.SetOthers(fleet.History{Span: own.Span, Size: own.Size, Newest: own.Newest,
		Buckets: []fleet.Bucket{{Failures: 40}}}))
	// (41 − 5) / (41 + 1)
	assert.InDelta(t, 36.0/42, dropProbability(t, b), 1e-12)
	mock.Add(span)
	assert.InDelta(t, 36.0/42, dropProbability(t, b), 1e-12, "finished: in the fleet's window")
}

// A fleet down for a window whose window holds drops alone probes as one
// breaker does: each process lets through its share of the fleet's calls,
// not its next call, which every process would make at once.
func TestMember_SetOthers_aFleetDownProbesWithItsShare(t *testing.T) {
	b, f, mock := newBreaker(t)
	mock.Add(50 * span)
	drops := make([]fleet.Bucket, 19)
	for i := range drops {
		drops[i] = fleet.Bucket{Drops: 4}
	}
	require.NoError(t, f.SetOthers(othersAt(f, append(failures(21, 3), drops...)...)))
	// The breaker has made no call: the others' 76 drops are all the
	// fleet's, (76 / 77) to the power 1/1.5.
	assert.InDelta(t, math.Pow(76.0/77, 1/1.5), dropProbability(t, b), 1e-12)
}

// On light traffic the breaker reads back past the window, through the
// fleet's blocks as through its own.
func TestMember_SetOthers_readsBackThroughTheFleetsBlocks(t *testing.T) {
	b, f, mock := newBreaker(t)
	mock.Add(3 * breaker.DefaultWindow)
	fail(t, b, 1)
	own := f.History()
	others := fleet.History{Span: own.Span, Size: own.Size, Newest: own.Newest,
		NewestBlock: own.Newest/20 - 1, Blocks: []fleet.Bucket{{Failures: 30}}}
	require.NoError(t, f.SetOthers(others))
	assert.Greater(t, dropProbability(t, b), 0.5, "the fleet's older failures count on light traffic")
}

func TestMember_SetOthers_invalid(t *testing.T) {
	b, f, mock := newBreaker(t, breaker.WithPlainFormula())
	mock.Add(span)
	require.NoError(t, f.SetOthers(othersAt(f, fleet.Bucket{Failures: 40})))
	before := dropProbability(t, b)
	good := othersAt(f, fleet.Bucket{Failures: 1})

	for _, tc := range []struct {
		name string
		edit func(h *fleet.History)
		want string
	}{
		{"negative", func(h *fleet.History) { h.Buckets[0].Successes = -1 },
			"fleet: invalid history: bucket 0 successes -1: must be between 0 and 1125899906842624"},
		{"huge", func(h *fleet.History) { h.Buckets[0].Drops = 1 << 62 },
			"fleet: invalid history: bucket 0 drops 4611686018427387904: must be between 0 and 1125899906842624"},
		{"another span", func(h *fleet.History) { h.Span = 50 * time.Millisecond },
			"fleet: invalid history: buckets of 50ms, 20 to a window; the breaker's are of 100ms, 20 to a window"},
		{"another size", func(h *fleet.History) { h.Size = 10 },
			"fleet: invalid history: buckets of 100ms, 10 to a window; the breaker's are of 100ms, 20 to a window"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := good
			h.Buckets = append([]fleet.Bucket(nil), good.Buckets...)
			tc.edit(&h)
			err := f.SetOthers(h)
			assert.ErrorIs(t, err, fleet.ErrInvalidHistory)
			assert.EqualError(t, err, tc.want)
			assert.Equal(t, before, dropProbability(t, b), "an invalid history changes nothing")
		})
	}
	require.NoError(t, f.SetOthers(fleet.History{}), "the zero History: the others hold nothing")
	assert.Equal(t, 0.0, dropProbability(t, b))
}

func TestOf(t *testing.T) {
	_, ok := fleet.Of(breaker.Nop())
	assert.False(t, ok)
	_, ok = fleet.Of(nil)
	assert.False(t, ok)
	_, ok = fleet.Of(breaker.MustNewRegistry().Get("db"))
	assert.True(t, ok, "a registry's breakers have one")
}

func TestOf_linksShareState(t *testing.T) {
	b, f, mock := newBreaker(t, breaker.WithPlainFormula())
	mock.Add(span)
	require.NoError(t, f.SetOthers(othersAt(f, fleet.Bucket{Failures: 40})))
	assert.Greater(t, dropProbability(t, b), 0.0)
	again, ok := fleet.Of(b)
	require.True(t, ok)
	again.ClearOthers()
	assert.Equal(t, 0.0, dropProbability(t, b))
}

func TestMember_Allow_noAllocationsWhileLinked(t *testing.T) {
	b := breaker.MustNew()
	f, _ := fleet.Of(b)
	require.NoError(t, f.SetOthers(othersAt(f, fleet.Bucket{Successes: 100, Failures: 3})))
	assert.Equal(t, 0.0, testing.AllocsPerRun(1000, func() {
		p, err := b.Allow()
		if err == nil {
			p.Accept()
		}
	}))
}

func TestMember_SetOthers_clockSteppedBack(t *testing.T) {
	b, f, mock := newBreaker(t, breaker.WithPlainFormula())
	mock.Add(span)
	require.NoError(t, f.SetOthers(othersAt(f, fleet.Bucket{Failures: 100})))
	require.Greater(t, dropProbability(t, b), 0.9)
	mock.Add(-time.Minute)
	assert.Equal(t, 0.0, dropProbability(t, b), "buckets set before the clock stepped back are not trusted")
}

func TestMember_SetOthers_callsWithACriticality(t *testing.T) {
	b, f, mock := newBreaker(t)
	mock.Add(span)
	require.NoError(t, f.SetOthers(othersAt(f, fleet.Bucket{Failures: 100})))
	ctx := criticality.With(context.Background(), criticality.Sheddable)
	dropped := 0
	for range 20 {
		if p, err := b.AllowCtx(ctx); err != nil {
			dropped++
		} else {
			p.Accept()
		}
	}
	assert.Greater(t, dropped, 10, "a call with a criticality decides on the fleet's history too")
}

// A breaker with no failures of its own may drop on its fleet's evidence;
// its drops are counted in its window.
func TestMember_SetOthers_dropsOnTheFleetsEvidenceAreCounted(t *testing.T) {
	b, f, mock := newBreaker(t)
	succeed(t, b, 1)
	mock.Add(10 * breaker.DefaultWindow)
	require.NoError(t, f.SetOthers(othersAt(f, failures(19, 20)...)))

	dropped := 0
	for range 100 {
		p, err := b.Allow()
		if err != nil {
			dropped++
			continue
		}
		p.Accept()
	}
	require.Greater(t, dropped, 0, "the fleet's failures shed")
	s := b.Stats()
	assert.Equal(t, int64(dropped), s.Drops, "every drop is in the window")
	assert.Equal(t, int64(dropped), s.TotalDrops)
}

// Two breakers on one grid, each publishing its history and taking the
// other's: a dependency down for both is shed by both, on evidence that
// neither holds enough of alone.
func TestMember_twoProcesses(t *testing.T) {
	a, fa, ma := newBreaker(t)
	b, fb, mb := newBreaker(t)
	for range 10 {
		ma.Add(span)
		mb.Add(span)
		fail(t, a, 1)
		fail(t, b, 1)
		require.NoError(t, fa.SetOthers(fb.History()))
		require.NoError(t, fb.SetOthers(fa.History()))
	}
	alone, _, _ := newBreaker(t)
	assert.Greater(t, dropProbability(t, a), dropProbability(t, alone))
	assert.Greater(t, dropProbability(t, a), 0.5)
	assert.Greater(t, dropProbability(t, b), 0.5)
}

// Publishing, setting the others' history and calls, all at once: for
// the race detector.
func TestMember_concurrentUse(t *testing.T) {
	b, f, mock := newBreaker(t)
	mock.Add(span)
	others := othersAt(f, failures(3, 4)...)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				switch g {
				case 0:
					_ = f.History()
				case 1:
					if i%2 == 0 {
						assert.NoError(t, f.SetOthers(others))
					} else {
						f.ClearOthers()
					}
				default:
					if p, err := b.Allow(); err == nil {
						p.Reject("boom")
					}
				}
			}
		}()
	}
	wg.Wait()
}

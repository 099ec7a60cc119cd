package proba_test

import (
	"math"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/proba"
)

func TestProba_TrueOnProba_edges(t *testing.T) {
	for name, p := range map[string]*proba.Proba{"global": proba.New(), "seeded": proba.NewSeeded(1), "nil": nil} {
		t.Run(name, func(t *testing.T) {
			for range 1000 {
				assert.False(t, p.TrueOnProba(0))
				assert.False(t, p.TrueOnProba(-0.5))
				assert.False(t, p.TrueOnProba(math.Inf(-1)))
				assert.False(t, p.TrueOnProba(math.NaN()))
				assert.True(t, p.TrueOnProba(1))
				assert.True(t, p.TrueOnProba(1.5))
				assert.True(t, p.TrueOnProba(math.Inf(1)))
			}
		})
	}
}

func TestProba_NewSeeded_sameSeedSameSequence(t *testing.T) {
	a, b, c := proba.NewSeeded(42), proba.NewSeeded(42), proba.NewSeeded(43)
	var sa, sb, sc []bool
	for range 200 {
		sa = append(sa, a.TrueOnProba(0.5))
		sb = append(sb, b.TrueOnProba(0.5))
		sc = append(sc, c.TrueOnProba(0.5))
	}
	assert.Equal(t, sa, sb)
	assert.NotEqual(t, sa, sc, "another seed gives another sequence")
}

func TestProba_TrueOnProba_shareMatchesProba(t *testing.T) {
	p := proba.NewSeeded(7)
	for _, want := range []float64{0.01, 0.3, 0.5, 0.9} {
		const n = 100_000
		hits := 0
		for range n {
			if p.TrueOnProba(want) {
				hits++
			}
		}
		// The standard deviation of the share is at most 0.0016 here; 0.01 is over six of them.
		assert.InDelta(t, want, float64(hits)/n, 0.01, "share of true for proba %v", want)
	}
}

func TestProba_TrueOnProba_concurrent(t *testing.T) {
	for name, p := range map[string]*proba.Proba{"global": proba.New(), "seeded": proba.NewSeeded(1)} {
		t.Run(name, func(t *testing.T) {
			var wg sync.WaitGroup
			var mu sync.Mutex
			hits := 0
			for range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					n := 0
					for range 10_000 {
						if p.TrueOnProba(0.5) {
							n++
						}
					}
					mu.Lock()
					hits += n
					mu.Unlock()
				}()
			}
			wg.Wait()
			assert.InDelta(t, 20_000, hits, 1_000)
		})
	}
}

var sink bool

func BenchmarkProba_TrueOnProba(b *testing.B) {
	for name, p := range map[string]*proba.Proba{"global": proba.New(), "seeded": proba.NewSeeded(1)} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				sink = p.TrueOnProba(0.5)
			}
		})
	}
}

func TestProba_Float64_inRangeAndSeeded(t *testing.T) {
	for name, p := range map[string]*proba.Proba{"global": proba.New(), "seeded": proba.NewSeeded(1), "nil": nil} {
		t.Run(name, func(t *testing.T) {
			sum := 0.0
			for range 100_000 {
				f := p.Float64()
				require.GreaterOrEqual(t, f, 0.0)
				require.Less(t, f, 1.0)
				sum += f
			}
			assert.InDelta(t, 0.5, sum/100_000, 0.01)
		})
	}
	a, b := proba.NewSeeded(9), proba.NewSeeded(9)
	for range 100 {
		assert.Equal(t, a.Float64(), b.Float64())
	}
}

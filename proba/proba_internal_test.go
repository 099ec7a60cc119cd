package proba

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
)

// fixedSource makes every draw of rand.Rand.Float64 return the same value.
type fixedSource struct{ bits uint64 }

func (s fixedSource) Uint64() uint64 { return s.bits }

func withDraw(draw float64) *Proba {
	return &Proba{src: rand.New(fixedSource{bits: uint64(draw * (1 << 53))})}
}

func TestProba_TrueOnProba_atTheDrawBoundary(t *testing.T) {
	for _, tc := range []struct {
		name  string
		draw  float64
		proba float64
		want  bool
	}{
		{name: "draw below proba", draw: 0.25, proba: 0.5, want: true},
		{name: "draw equal to proba", draw: 0.5, proba: 0.5, want: false},
		{name: "draw above proba", draw: 0.75, proba: 0.5, want: false},
		{name: "zero draw, tiny proba", draw: 0, proba: math.SmallestNonzeroFloat64, want: true},
		{name: "zero draw, zero proba", draw: 0, proba: 0, want: false},
		{name: "zero draw, negative proba", draw: 0, proba: -1, want: false},
		{name: "zero draw, NaN", draw: 0, proba: math.NaN(), want: false},
		{name: "highest draw, proba one", draw: 1 - 1.0/(1<<53), proba: 1, want: true},
		{name: "highest draw, +Inf", draw: 1 - 1.0/(1<<53), proba: math.Inf(1), want: true},
		{name: "highest draw, just under one", draw: 1 - 1.0/(1<<53), proba: 1 - 1.0/(1<<52), want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, withDraw(tc.draw).TrueOnProba(tc.proba))
		})
	}
}

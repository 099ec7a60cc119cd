package statuspage

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
)

var t0 = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

func TestHistory_add_boundedRing(t *testing.T) {
	var h history
	for i := range 1000 {
		h.add(t0.Add(time.Duration(i)*time.Second), float64(i))
		require.LessOrEqual(t, h.n, historyLen)
	}
	got := h.since(time.Time{})
	require.Len(t, got, historyLen, "the ring keeps the newest minute and the current second")
	assert.Equal(t, float64(1000-historyLen), got[0].DropProbability)
	assert.Equal(t, float64(999), got[len(got)-1].DropProbability)
	assert.Len(t, h.since(t0.Add(999*time.Second).Add(-historySpan)), historyLen-1)
}

func TestHistory_add_sameSecondUpdates(t *testing.T) {
	var h history
	h.add(t0.Add(100*time.Millisecond), 0.1)
	h.add(t0.Add(900*time.Millisecond), 0.9)
	h.add(t0.Add(1000*time.Millisecond), 1)
	assert.Equal(t, []Sample{{At: t0.Add(900 * time.Millisecond), DropProbability: 0.9}, {At: t0.Add(time.Second), DropProbability: 1}},
		h.since(time.Time{}))
}

func TestHistory_add_clockSetBack(t *testing.T) {
	var h history
	h.add(t0.Add(time.Hour), 0.5)
	h.add(t0, 0.25)
	assert.Equal(t, []Sample{{At: t0, DropProbability: 0.25}}, h.since(time.Time{}), "a history starts anew")
}

func TestPage_Snapshot_keepsHistoriesOfShownBreakersOnly(t *testing.T) {
	m := clock.NewMock()
	m.Set(t0)
	r := breaker.MustNewRegistry(breaker.WithClock(m))
	r.SetLimit(1000)
	page := MustNew(r, WithClock(m), WithLimit(10))
	for i := range 500 {
		r.Get(strings.Repeat("x", i%7) + string(rune('a'+i%26)) + strings.Repeat("y", i))
		if i%50 == 0 {
			page.Snapshot()
			page.mu.Lock()
			assert.LessOrEqual(t, len(page.histories), 10)
			page.mu.Unlock()
		}
	}
	s := page.Snapshot()
	assert.Equal(t, 500, s.Total)
	assert.Len(t, s.Breakers, 10)
	page.mu.Lock()
	defer page.mu.Unlock()
	assert.Len(t, page.histories, 10)
	for _, b := range s.Breakers {
		assert.LessOrEqual(t, len(b.Name), maxNameBytes+len(" (10)"), "cut, and made distinct")
	}
}

func TestCut(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
		n              int
	}{
		{"short", "abc", "abc", 10},
		{"exact", "abcdefghij", "abcdefghij", 10},
		{"ascii", "abcdefghijk", "abcdefg…", 10},
		{"not inside a rune", "ééééééé", "ééé…", 10},
		{"invalid bytes", "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", "\xff\xff\xff\xff\xff\xff\xff…", 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := cut(tc.in, tc.n)
			assert.Equal(t, tc.want, got)
			assert.LessOrEqual(t, len(got), tc.n)
			if utf8.ValidString(tc.in) {
				assert.True(t, utf8.ValidString(got))
			}
		})
	}
}

package browsertest

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/statuspage"
)

// overloaded is a breaker whose Stats carry the figures of a server's
// overload limit given by hand.
type overloaded struct {
	breaker.Breaker
	overload breaker.OverloadStats
}

func (o overloaded) Stats() breaker.Stats {
	s := o.Breaker.Stats()
	s.Overload = &o.overload
	return s
}

// breakers is a [breaker.Source] over a fixed list of breakers.
type breakers []breaker.Breaker

func (bs breakers) Range(f func(name string, b breaker.Breaker) bool) {
	for _, b := range bs {
		if !f(b.Name(), b) {
			return
		}
	}
}

// A server's overload limit is shown on its breaker's card, and on no
// other.
func TestPage_inChromium_overloadShown(t *testing.T) {
	w := newWorld(t)
	w.failing = map[string]float64{"payments": 0, "server:http": 0}
	w.run(2 * time.Second)
	srv := overloaded{Breaker: w.reg.Get("server:http"), overload: breaker.OverloadStats{
		Limit: 12.5, InFlight: 12, Queued: 3, Overloaded: true, Rejected: [4]int64{0, 2, 40, 1300}}}
	page := statuspage.MustNew(breakers{w.reg.Get("payments"), srv}, statuspage.WithClock(w.clock))

	hs := httptest.NewServer(page) // listens on 127.0.0.1
	defer hs.Close()
	b := startChromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tab, err := b.newTab(ctx, width, 700)
	require.NoError(t, err)
	require.NoError(t, tab.navigate(ctx, hs.URL+"/"))
	tab.waitFor(t, timeout, "the overload box", `document.querySelectorAll('section.breaker .overload').length === 1`)

	var shown struct {
		Card, Caption string
		Figures       []string
		Rejected      [][]string
		Levels        int
	}
	require.NoError(t, tab.eval(ctx, `(() => {
		const o = document.querySelector('section.breaker .overload');
		return {Card: o.closest('section').dataset.name, Caption: o.querySelector('.caption').textContent,
			Figures: [...o.querySelectorAll('.figures > div')].map(d => d.textContent),
			Rejected: [...o.querySelectorAll('table.rejections tr')].slice(1).map(r => [...r.cells].map(c => c.textContent)),
			Levels: document.querySelectorAll('table.levels').length};
	})()`, &shown))
	assert.Equal(t, "server:http", shown.Card)
	assert.Equal(t, "server overloaded: lowest levels rejected first", shown.Caption)
	assert.Equal(t, []string{"12.5limit", "12in flight", "3queued", "1,342rejected"}, shown.Figures)
	assert.Equal(t, [][]string{{"CRITICAL_PLUS", "0"}, {"CRITICAL", "2"}, {"SHEDDABLE_PLUS", "40"}, {"SHEDDABLE", "1,300"}},
		shown.Rejected, "by level, highest first")
	assert.Zero(t, shown.Levels, "the rejections are not the breaker's level table")

	// A server at capacity whose queue is held short says so.
	srv.overload = breaker.OverloadStats{Limit: 5, InFlight: 5, Queued: 20, QueueHeld: true, Rejected: [4]int64{0, 0, 0, 30}}
	held := httptest.NewServer(statuspage.MustNew(breakers{w.reg.Get("payments"), srv}, statuspage.WithClock(w.clock)))
	defer held.Close()
	require.NoError(t, tab.navigate(ctx, held.URL+"/"))
	tab.waitFor(t, timeout, "the overload box", `document.querySelectorAll('section.breaker .overload.on').length === 1`)
	var caption string
	require.NoError(t, tab.eval(ctx, `document.querySelector('section.breaker .overload .caption').textContent`, &caption))
	assert.Equal(t, "server at capacity: queue held short, lowest levels rejected first", caption)
}

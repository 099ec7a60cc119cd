package browsertest

import (
	"context"
	"errors"
	"maps"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/criticality"
	"github.com/srebreaker/srebreaker/override"
	"github.com/srebreaker/srebreaker/proba"
	"github.com/srebreaker/srebreaker/statuspage"
)

const (
	// width is the browser's viewport, in CSS pixels.
	width = 1100
	// timeout bounds each wait for the browser.
	timeout = 30 * time.Second
	// screenshot is where UPDATE_SCREENSHOT=1 writes the page.
	screenshot = "../../docs/statuspage.png"
)

// world is a registry of breakers in front of dependencies that the test
// drives, on a mock clock, and the page that shows them.
type world struct {
	t     *testing.T
	clock *clock.Mock
	reg   *breaker.Registry
	page  *statuspage.Page
	// failing is the share of calls to each dependency that fail, by name.
	failing map[string]float64
	rnd     *proba.Proba
	reasons map[string]string
	calls   int
}

func newWorld(t *testing.T) *world {
	m := clock.NewMock()
	m.Set(time.Date(2024, 1, 1, 12, 0, 0, 0, time.UTC))
	reg := breaker.MustNewRegistry(breaker.WithClock(m), breaker.WithProba(proba.NewSeeded(1)))
	return &world{t: t, clock: m, reg: reg, page: statuspage.MustNew(reg, statuspage.WithClock(m)),
		failing: map[string]float64{}, rnd: proba.NewSeeded(2), reasons: map[string]string{}}
}

// run moves the clock by d, a second at a time, calling each dependency 40
// times a second, and samples the page once a second as its poll would.
func (w *world) run(d time.Duration) {
	for s := time.Duration(0); s < d; s += time.Second {
		for range 10 {
			w.clock.Add(100 * time.Millisecond)
			for range 4 {
				w.calls++
				for _, name := range slices.Sorted(maps.Keys(w.failing)) { // in one order: the draws repeat
					share := w.failing[name]
					ctx := context.Background()
					if name == "inventory" { // asks at the four levels in turn
						levels := [...]criticality.Level{criticality.CriticalPlus, criticality.Critical,
							criticality.SheddablePlus, criticality.Sheddable}
						ctx = criticality.With(ctx, levels[w.calls%len(levels)])
					}
					fail := w.rnd.TrueOnProba(share)
					_ = w.reg.Get(name).DoCtx(ctx, func() error {
						if fail {
							return errors.New(w.reasons[name])
						}
						return nil
					})
				}
			}
		}
		w.page.Snapshot()
	}
}

// card is what the page shows of a breaker.
type card struct {
	Name    string   `json:"name"`
	P       string   `json:"p"`
	Points  int      `json:"points"`
	Reasons []string `json:"reasons"`
	Levels  int      `json:"levels"`
}

const cardsJS = `[...document.querySelectorAll('section.breaker')].map(c => ({
	name: c.querySelector('.name').textContent,
	p: c.querySelector('.p').textContent,
	points: [...c.querySelectorAll('polyline')].reduce((n, l) => n + l.points.numberOfItems, 0),
	reasons: [...c.querySelectorAll('.reasons .text')].map(r => r.textContent),
	levels: c.querySelectorAll('table.levels td:first-child').length,
}))`

// percent reads the page's drop probability, "37.5 %".
func percent(t *testing.T, s string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimPrefix(s, "<"), " %"), 64)
	require.NoError(t, err, "drop probability %q", s)
	return f
}

func TestPage_inChromium(t *testing.T) {
	w := newWorld(t)
	w.failing = map[string]float64{"checkout": 0, "search": 0.02, "inventory": 0.5}
	w.reasons = map[string]string{"checkout": "checkout: dial tcp: connect: connection refused",
		"search": "search: HTTP 502 Bad Gateway", "inventory": "inventory: context deadline exceeded"}
	w.run(40 * time.Second)

	srv := httptest.NewServer(w.page) // listens on 127.0.0.1
	defer srv.Close()
	b := startChromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tab, err := b.newTab(ctx, width, 700)
	require.NoError(t, err)
	require.NoError(t, tab.navigate(ctx, srv.URL+"/debug/breakers"))

	// The page renders every breaker, checkout healthy.
	tab.waitFor(t, timeout, "three breakers", `document.querySelectorAll('section.breaker').length === 3`)
	var cards []card
	require.NoError(t, tab.eval(ctx, cardsJS, &cards))
	require.Len(t, cards, 3)
	assert.Equal(t, []string{"checkout", "inventory", "search"}, []string{cards[0].Name, cards[1].Name, cards[2].Name})
	assert.Equal(t, "0.0 %", cards[0].P, "checkout is healthy")
	assert.Greater(t, cards[0].Points, 30, "a chart of the last 40 s")
	assert.Positive(t, percent(t, cards[1].P), "inventory fails half its calls")
	assert.Equal(t, 4, cards[1].Levels, "inventory's calls ask at four levels")
	assert.Equal(t, 0, cards[0].Levels)
	var title, status string
	require.NoError(t, tab.eval(ctx, `document.title`, &title))
	assert.Equal(t, "Breakers", title)
	require.NoError(t, tab.eval(ctx, `document.getElementById('status').textContent`, &status))
	assert.Equal(t, "3 breakers · 12:00:40 UTC", status)

	// checkout's dependency fails: the page, polling, shows it shed.
	w.failing["checkout"] = 1
	w.run(12 * time.Second)
	tab.waitFor(t, timeout, "checkout shed on the page",
		`parseFloat(document.querySelector('section.breaker .p').textContent) > 50`)
	require.NoError(t, tab.eval(ctx, cardsJS, &cards))
	require.Len(t, cards, 3)
	assert.Equal(t, "checkout", cards[0].Name)
	assert.Greater(t, percent(t, cards[0].P), 50.0)
	require.NotEmpty(t, cards[0].Reasons)
	assert.Equal(t, "checkout: dial tcp: connect: connection refused", cards[0].Reasons[0])
	require.NoError(t, tab.eval(ctx, `document.getElementById('status').textContent`, &status))
	assert.Equal(t, "3 breakers · 12:00:52 UTC", status)

	if os.Getenv("UPDATE_SCREENSHOT") == "1" {
		png, err := tab.screenshot(ctx, width)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.FromSlash(screenshot), png, 0o644))
		t.Logf("wrote %s, %d bytes", screenshot, len(png))
	}
}

func TestPage_inChromium_hostileNamesAreText(t *testing.T) {
	w := newWorld(t)
	name := `<img src=x onerror="document.title='name ran'">`
	reason := `</script><script>document.title='reason ran'</script><b>bold</b>`
	w.failing = map[string]float64{name: 1}
	w.reasons = map[string]string{name: reason}
	w.run(3 * time.Second)

	srv := httptest.NewServer(w.page)
	defer srv.Close()
	b := startChromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tab, err := b.newTab(ctx, width, 700)
	require.NoError(t, err)
	require.NoError(t, tab.navigate(ctx, srv.URL+"/"))
	tab.waitFor(t, timeout, "the breaker", `document.querySelectorAll('section.breaker').length === 1`)

	// And once more after a poll has redrawn the page.
	tab.waitFor(t, timeout, "a poll", `document.getElementById('status').textContent.endsWith('12:00:03 UTC')`)
	w.run(time.Second)
	tab.waitFor(t, timeout, "a poll", `document.getElementById('status').textContent.endsWith('12:00:04 UTC')`)

	var cards []card
	require.NoError(t, tab.eval(ctx, cardsJS, &cards))
	require.Len(t, cards, 1)
	assert.Equal(t, name, cards[0].Name, "the name, as text")
	require.NotEmpty(t, cards[0].Reasons)
	assert.Equal(t, reason, cards[0].Reasons[0], "the reason, as text")
	var n int
	require.NoError(t, tab.eval(ctx, `document.querySelectorAll('img, main script, .name *, .reasons .text *').length`, &n))
	assert.Zero(t, n, "no element from a name or reason")
	var title string
	require.NoError(t, tab.eval(ctx, `document.title`, &title))
	assert.Equal(t, "Breakers", title, "no script from a name or reason ran")
}

// An operator's override is shown on its breaker's card, its reason as
// text, and the page offers no control to change it.
func TestPage_inChromium_overrideShownReadOnly(t *testing.T) {
	w := newWorld(t)
	w.failing = map[string]float64{"payments": 0, "search": 0}
	w.run(2 * time.Second)
	reason := `<b>db failover</b><script>document.title='reason ran'</script>`
	require.NoError(t, w.reg.Get("payments").SetOverride(override.Spec{Mode: override.ShedAll,
		TTL: 10 * time.Minute, Reason: reason, By: "alice"}))

	srv := httptest.NewServer(w.page) // listens on 127.0.0.1
	defer srv.Close()
	b := startChromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tab, err := b.newTab(ctx, width, 700)
	require.NoError(t, err)
	require.NoError(t, tab.navigate(ctx, srv.URL+"/"))
	tab.waitFor(t, timeout, "the override", `document.querySelectorAll('section.breaker .override').length === 1`)

	var shown struct {
		Card, Mode, Who, Why string
		Controls             int
		Title                string
	}
	require.NoError(t, tab.eval(ctx, `(() => {
		const o = document.querySelector('section.breaker .override');
		return {Card: o.closest('section').dataset.name, Mode: o.querySelector('.mode').textContent,
			Who: o.querySelector('.who').textContent, Why: o.querySelector('.why').textContent,
			Controls: document.querySelectorAll('form, button, input, select, textarea, .override *  *').length,
			Title: document.title};
	})()`, &shown))
	assert.Equal(t, "payments", shown.Card)
	assert.Equal(t, "override · forced open: every call dropped", shown.Mode)
	assert.Equal(t, "by alice, set 0 s ago, ends in 10 min, 0 dropped", shown.Who)
	assert.Equal(t, reason, shown.Why, "the reason, as text")
	assert.Zero(t, shown.Controls, "no control on the page, no element from the reason")
	assert.Equal(t, "Breakers", shown.Title, "no script from the reason ran")
}

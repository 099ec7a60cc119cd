package statuspage_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/httpbreaker"
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

func TestPage_ServeHTTP_overload(t *testing.T) {
	m, r := fixture(t)
	calls(t, r.Get("server:http"), 10, 0, "")
	srv := overloaded{Breaker: r.Get("server:http"), overload: breaker.OverloadStats{
		Limit: 12.5, InFlight: 12, Queued: 3, Overloaded: true, Rejected: [4]int64{0, 2, 40, 300}}}
	page := statuspage.MustNew(breakers{r.Get("payments"), srv}, statuspage.WithClock(m))

	s := snapshot(t, page)
	require.Len(t, s.Breakers, 2)
	pay, server := s.Breakers[0], s.Breakers[1]
	assert.Nil(t, pay.Overload, "no server uses payments")
	assert.Equal(t, &statuspage.Overload{Limit: 12.5, InFlight: 12, Queued: 3, Overloaded: true,
		Rejected: []statuspage.Rejected{{"CRITICAL_PLUS", 0}, {"CRITICAL", 2}, {"SHEDDABLE_PLUS", 40}, {"SHEDDABLE", 300}}},
		server.Overload, "Rejected's order is the levels', highest first")
	assert.Equal(t, int64(10), server.Successes, "the breaker's own figures stay")

	_, body := get(t, page, "/?format=json")
	assert.Contains(t, body, `"overload":{"limit":12.5,"in_flight":12,"queued":3,"overloaded":true,"queue_held":false,`+
		`"rejected":[{"criticality":"CRITICAL_PLUS","calls":0},{"criticality":"CRITICAL","calls":2},`+
		`{"criticality":"SHEDDABLE_PLUS","calls":40},{"criticality":"SHEDDABLE","calls":300}]}`)
	assert.Equal(t, 1, strings.Count(body, `"overload"`), "left out for payments")

	_, html := get(t, page, "/")
	assert.Contains(t, html, `"in_flight":12`, "the page's data holds the figures")
}

// A Handler ties its overload limit to its breaker on its first request:
// the page shows the calls it holds in its handler.
func TestPage_ServeHTTP_overloadOfAHandler(t *testing.T) {
	m, r := fixture(t)
	const held = 3
	in, release := make(chan struct{}), make(chan struct{})
	h := httpbreaker.MustNewHandler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		in <- struct{}{}
		<-release
	}), httpbreaker.WithRegistry(r), httpbreaker.WithOverloadLimit(true))
	page := statuspage.MustNew(r, statuspage.WithClock(m))
	r.Get(httpbreaker.DefaultHandlerKey)
	require.Nil(t, snapshot(t, page).Breakers[0].Overload, "no request yet")

	var wg sync.WaitGroup
	for range held {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
		}()
	}
	for range held {
		<-in
	}
	s := snapshot(t, page)
	require.Len(t, s.Breakers, 1)
	assert.Equal(t, httpbreaker.DefaultHandlerKey, s.Breakers[0].Name)
	o := s.Breakers[0].Overload
	require.NotNil(t, o)
	assert.Equal(t, held, o.InFlight)
	assert.Zero(t, o.Queued)
	assert.False(t, o.Overloaded)
	assert.GreaterOrEqual(t, o.Limit, float64(held))
	assert.Len(t, o.Rejected, 4)

	close(release)
	wg.Wait()
	assert.Zero(t, snapshot(t, page).Breakers[0].Overload.InFlight, "answered")
}

// Past WithLimit, an overloaded server's breaker, which drops nothing, is
// kept before one whose dependency fails, and so is one whose queue is
// held short: the page shows the server turning calls away.
func TestPage_ServeHTTP_limitKeepsOverloaded(t *testing.T) {
	_, r := fixture(t)
	calls(t, r.Get("payments"), 0, 20, "down")
	calls(t, r.Get("server:http"), 20, 0, "")
	srv := overloaded{Breaker: r.Get("server:http"), overload: breaker.OverloadStats{Limit: 4, Overloaded: true}}
	calm := overloaded{Breaker: r.Get("server:grpc"), overload: breaker.OverloadStats{Limit: 4}}
	held := overloaded{Breaker: r.Get("server:grpc"), overload: breaker.OverloadStats{Limit: 4, QueueHeld: true}}
	for _, tc := range []struct {
		name string
		src  breakers
		want string
	}{
		{"overloaded", breakers{r.Get("payments"), srv}, "server:http"},
		{"its queue held", breakers{r.Get("payments"), held}, "server:grpc"},
		{"not overloaded", breakers{r.Get("payments"), calm}, "payments"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := snapshot(t, statuspage.MustNew(tc.src, statuspage.WithLimit(1)))
			require.Len(t, s.Breakers, 1)
			assert.Equal(t, tc.want, s.Breakers[0].Name)
		})
	}
}

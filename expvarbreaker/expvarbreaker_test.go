package expvarbreaker_test

import (
	"context"
	"encoding/json"
	"expvar"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/criticality"
	"github.com/srebreaker/srebreaker/expvarbreaker"
	"github.com/srebreaker/srebreaker/override"
	"github.com/srebreaker/srebreaker/proba"
)

func TestFunc_servedByTheExpvarHandler(t *testing.T) {
	m := clock.NewMock()
	m.Set(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	r := breaker.MustNewRegistry(breaker.WithClock(m), breaker.WithProba(proba.NewSeeded(1)), breaker.WithPlainFormula(),
		breaker.WithK(1), breaker.WithProtection(0))
	for range 30 {
		p, err := r.Get("payments").Allow()
		require.NoError(t, err)
		p.Accept()
	}
	for range 10 {
		if p, err := r.Get("payments").Allow(); err == nil {
			p.Reject("timeout")
		}
	}
	r.Get("idle")
	r.NoBreakerFor("legacy")
	name := fmt.Sprint("breakers_test_", runs.Add(1)) // expvar names live as long as the process: one per run
	expvar.Publish(name, expvarbreaker.Func(r))

	srv := httptest.NewServer(expvar.Handler()) // listens on 127.0.0.1
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	require.NoError(t, err)
	defer resp.Body.Close()
	var vars map[string]json.RawMessage
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&vars))
	var breakers map[string]expvarbreaker.Figures
	require.NoError(t, json.Unmarshal(vars[name], &breakers))

	assert.Len(t, breakers, 2, "a breaker without stats (legacy) is left out")
	p := breakers["payments"]
	assert.Equal(t, int64(30), p.Successes)
	assert.Equal(t, int64(30), p.TotalSuccesses)
	assert.Equal(t, p.TotalSuccesses+p.TotalFailures+p.TotalDrops, p.Requests)
	assert.Positive(t, p.Failures)
	assert.Positive(t, p.DropProbability)
	require.NotEmpty(t, p.Reasons)
	assert.Equal(t, "timeout", p.Reasons[0].Text)
	assert.True(t, p.Reasons[0].At.Equal(m.Now()))
	assert.Zero(t, breakers["idle"].Requests)
}

func TestFunc_criticalities(t *testing.T) {
	m := clock.NewMock()
	m.Set(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	r := breaker.MustNewRegistry(breaker.WithClock(m), breaker.WithProba(proba.NewSeeded(1)))
	for range 5 {
		p, err := r.Get("search").AllowCtx(criticality.With(context.Background(), criticality.Critical))
		require.NoError(t, err)
		p.Accept()
	}
	payments := r.Get("payments")
	levels := []criticality.Level{criticality.CriticalPlus, criticality.Critical, criticality.SheddablePlus, criticality.Sheddable}
	for range 30 { // 10 calls of each level per 100 ms; the two sheddable levels fail
		for i, c := range levels {
			ctx := criticality.With(context.Background(), c)
			for range 10 {
				if p, err := payments.AllowCtx(ctx); err == nil {
					if i < 2 {
						p.Accept()
					} else {
						p.Reject("overloaded")
					}
				}
			}
		}
		m.Add(100 * time.Millisecond)
	}
	name := fmt.Sprint("breakers_levels_", runs.Add(1))
	expvar.Publish(name, expvarbreaker.Func(r))
	srv := httptest.NewServer(expvar.Handler()) // listens on 127.0.0.1
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	require.NoError(t, err)
	defer resp.Body.Close()
	var vars map[string]json.RawMessage
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&vars))
	var raw map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(vars[name], &raw))
	assert.NotContains(t, string(raw["search"]), "criticalities", "a breaker whose calls named no other level")

	var breakers map[string]expvarbreaker.Figures
	require.NoError(t, json.Unmarshal(vars[name], &breakers))
	p := breakers["payments"]
	require.Len(t, p.Criticalities, 4)
	s := payments.Stats()
	var requests int64
	for _, c := range s.Criticalities {
		got := p.Criticalities[c.Level.String()]
		assert.Equal(t, expvarbreaker.LevelFigures{Successes: c.Successes, Failures: c.Failures, Drops: c.Drops,
			Requests: c.TotalSuccesses + c.TotalFailures + c.TotalDrops, TotalSuccesses: c.TotalSuccesses,
			TotalFailures: c.TotalFailures, TotalDrops: c.TotalDrops, DropProbability: c.DropProbability}, got,
			c.Level.String())
		requests += got.Requests
	}
	assert.Equal(t, p.Requests, requests, "the levels add up to the breaker")
	assert.Equal(t, int64(300), p.Criticalities["CRITICAL_PLUS"].Requests)
	assert.Zero(t, p.Criticalities["CRITICAL_PLUS"].TotalDrops)
	assert.Positive(t, p.Criticalities["SHEDDABLE"].TotalDrops)
}

func TestFunc_breakersOutsideARegistry(t *testing.T) {
	b := breaker.MustNew(breaker.WithName("payments"))
	p, err := b.Allow()
	require.NoError(t, err)
	p.Accept()
	var got map[string]expvarbreaker.Figures
	require.NoError(t, json.Unmarshal([]byte(expvarbreaker.Func(breakers{b, breaker.Nop()}).String()), &got))
	assert.Equal(t, map[string]expvarbreaker.Figures{"payments": {Successes: 1, Requests: 1, TotalSuccesses: 1,
		Reasons: []expvarbreaker.Reason{}}}, got, "the Nop breaker reports nothing")
}

// runs numbers the variables the tests publish.
var runs atomic.Int64

func ExampleFunc() {
	r := breaker.MustNewRegistry()
	r.Get("payments")
	v := expvarbreaker.Func(r)
	fmt.Println(v.String()[:39])
	// Output: {"payments":{"successes":0,"failures":0
}

// Issue 11: "a\xff" and "a\xfe" became one key "a\uFFFD" in the JSON:
// ten breakers showed as nine.
func TestFunc_namesThatEscapeAlikeStayApart(t *testing.T) {
	r := breaker.MustNewRegistry()
	for i, name := range []string{"a\xff", "a\xfe", `a\xff`, "a\uFFFD", "ok"} {
		for range i + 1 {
			p, err := r.Get(name).Allow()
			require.NoError(t, err)
			p.Accept()
		}
	}
	var got map[string]expvarbreaker.Figures
	require.NoError(t, json.Unmarshal([]byte(expvarbreaker.Func(r).String()), &got))
	successes := map[string]int64{}
	for key, f := range got {
		successes[key] = f.Successes
	}
	assert.Equal(t, map[string]int64{`a\xff`: 3, "a\uFFFD": 4, "ok": 5, `a\xfe`: 2, `a\xff (2)`: 1}, successes,
		"names valid as they are keep them; the rest escape, apart")
}

// breakers is a [breaker.Source] over a fixed list of breakers, nil ones
// skipped.
type breakers []breaker.Breaker

func (bs breakers) Range(f func(name string, b breaker.Breaker) bool) {
	for _, b := range bs {
		if b != nil && !f(b.Name(), b) {
			return
		}
	}
}

func TestFunc_override(t *testing.T) {
	m := clock.NewMock()
	m.Set(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	r := breaker.MustNewRegistry(breaker.WithClock(m))
	require.NoError(t, r.Get("payments").SetOverride(override.Spec{Mode: override.ShedAll,
		TTL: 10 * time.Minute, Reason: "database failover", By: "alice"}))
	_, err := r.Get("payments").Allow()
	require.ErrorIs(t, err, breaker.ErrForced)
	r.Get("search")
	name := fmt.Sprint("breakers_test_", runs.Add(1))
	expvar.Publish(name, expvarbreaker.Func(r))

	srv := httptest.NewServer(expvar.Handler()) // listens on 127.0.0.1
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	require.NoError(t, err)
	defer resp.Body.Close()
	var vars map[string]json.RawMessage
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&vars))
	var breakers map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(vars[name], &breakers))
	assert.JSONEq(t, `{"mode": "shed_all", "reason": "database failover", "by": "alice",
		"set_at": "2024-01-01T00:00:00Z", "expires": "2024-01-01T00:10:00Z", "drops": 1}`,
		string(overrideOf(t, breakers["payments"])))
	assert.Nil(t, overrideOf(t, breakers["search"]), "left out without an override")

	m.Add(10 * time.Minute)
	f := expvarbreaker.Func(r)().(map[string]expvarbreaker.Figures)
	assert.Nil(t, f["payments"].Override, "gone once it expired")
}

// overrideOf returns the "override" member of a breaker's JSON figures.
func overrideOf(t *testing.T, figures json.RawMessage) json.RawMessage {
	t.Helper()
	var members map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(figures, &members))
	return members["override"]
}

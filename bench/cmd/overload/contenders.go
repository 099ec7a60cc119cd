package main

import (
	"context"
	"net/http"
	"time"

	"github.com/failsafe-go/failsafe-go/adaptivelimiter"
	"github.com/failsafe-go/failsafe-go/failsafehttp"
	"github.com/failsafe-go/failsafe-go/priority"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/criticality"
	"github.com/srebreaker/srebreaker/httpbreaker"
)

// contender is what stands between the clients and the naive handler.
// wrap builds a fresh one for a run, in front of next, a resource of w
// slots; stop, when not nil, ends what it started.
type contender struct {
	name string
	wrap func(next http.Handler, w int) (h http.Handler, stop func())
}

// contenders are the ones the command knows, in the order of the tables.
var contenders = []contender{
	{"none", wrapNone},
	{"ours-no-limit", wrapOursNoLimit},
	{"static", wrapStatic},
	{"failsafe-adaptive", wrapFailsafeAdaptive},
	{"failsafe-priority", wrapFailsafePriority},
	{"ours", wrapOurs},
}

func contenderNames() []string {
	names := make([]string, len(contenders))
	for i, c := range contenders {
		names[i] = c.name
	}
	return names
}

// wrapNone is the naive handler alone.
func wrapNone(next http.Handler, _ int) (http.Handler, func()) { return next, nil }

// ourHandler is an httpbreaker Handler at its defaults (the overload
// limit on), that trusts the criticality header up to CRITICAL_PLUS, with
// a registry of its own so that no run inherits another's breaker.
func ourHandler(next http.Handler, opts ...httpbreaker.HandlerOption) http.Handler {
	reg, err := breaker.NewRegistry()
	if err != nil {
		panic(err)
	}
	opts = append([]httpbreaker.HandlerOption{httpbreaker.WithRegistry(reg),
		httpbreaker.WithCriticalityPolicy(httpbreaker.TrustHeader(criticality.CriticalPlus))}, opts...)
	return httpbreaker.MustNewHandler(next, opts...)
}

// wrapOursNoLimit is our Handler with its overload limit turned off
// (withoutLimit): the server side as it was before the limit.
func wrapOursNoLimit(next http.Handler, _ int) (http.Handler, func()) {
	return ourHandler(next, withoutLimit...), nil
}

// wrapOurs is our Handler at its defaults, the overload limit included
// where the tree has one (haveLimit).
func wrapOurs(next http.Handler, _ int) (http.Handler, func()) { return ourHandler(next), nil }

// rejectedBody is the static limit's answer to a call over it.
const rejectedBody = "503 Service Unavailable: over the limit\n"

// wrapStatic is a semaphore of the true capacity, w calls in flight: what
// a user who knew the capacity would set. A call over it gets 503 at once.
func wrapStatic(next http.Handler, w int) (http.Handler, func()) {
	sem := make(chan struct{}, w)
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		select {
		case sem <- struct{}{}:
		default:
			http.Error(rw, rejectedBody, http.StatusServiceUnavailable)
			return
		}
		defer func() { <-sem }()
		next.ServeHTTP(rw, r)
	}), nil
}

// wrapFailsafeAdaptive is failsafe-go's adaptive limiter at its defaults,
// through its own HTTP handler (failsafehttp), which answers a call over
// the limit with 429 Too Many Requests.
func wrapFailsafeAdaptive(next http.Handler, _ int) (http.Handler, func()) {
	return failsafehttp.NewHandler(next, adaptivelimiter.NewBuilder[*http.Response]().Build()), nil
}

// calibration is how often the priority limiter's prioritizer recomputes
// its rejection threshold: failsafe-go leaves it to the user.
const calibration = 100 * time.Millisecond

// priorities maps a level, by [criticality.Level.Index], to failsafe-go's
// priority: SHEDDABLE → low … CRITICAL_PLUS → very high.
var priorities = [4]priority.Priority{priority.Low, priority.Medium, priority.High, priority.VeryHigh}

// wrapFailsafePriority is failsafe-go's PriorityLimiter at its defaults
// (a prioritizer of its own, calibrated every 100 ms), the call's level
// from the criticality header mapped to a priority, through failsafehttp.
func wrapFailsafePriority(next http.Handler, _ int) (http.Handler, func()) {
	p := adaptivelimiter.NewPrioritizer()
	limiter := adaptivelimiter.NewBuilder[*http.Response]().BuildPrioritized(p)
	stop := p.ScheduleCalibrations(context.Background(), calibration)
	limited := failsafehttp.NewHandler(next, limiter)
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		level, err := criticality.Parse(r.Header.Get(httpbreaker.CriticalityHeader))
		if err != nil {
			level = criticality.Default
		}
		limited.ServeHTTP(rw, r.WithContext(priority.ContextWithPriority(r.Context(), priorities[level.Index()])))
	}), stop
}

package main

import (
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/srebreaker/srebreaker/criticality"
)

// mix is the share of the calls at each level, by [criticality.Level.Index]
// (SHEDDABLE first): 30 % SHEDDABLE, 20 % SHEDDABLE_PLUS, 40 % CRITICAL,
// 10 % CRITICAL_PLUS.
var mix = [4]float64{0.30, 0.20, 0.40, 0.10}

// heavySigma is the σ of the heavy-tailed service time, a lognormal whose
// 99.9th percentile is 50 times its median: exp(σ·z) = 50 with z the
// standard normal's 99.9th percentile, 3.0902.
var heavySigma = math.Log(50) / 3.090232306167813

// drawHeader carries a call's service time, as a multiple of the mean
// service time, from the schedule to the resource.
const drawHeader = "X-Bench-Service"

// callHeader carries a call's index among the run's arrivals, so that
// work done for it after its caller had gone is counted with the call's
// arrival, as every other figure of a row is.
const callHeader = "X-Bench-Call"

// burst is a stretch of higher traffic that comes back every so often.
type burst struct {
	every    time.Duration // one burst per period, at the end of it
	length   time.Duration
	multiple float64 // offered rate during the burst, × capacity
}

// phase is a stretch of a run with one offered rate and one service time.
type phase struct {
	length   time.Duration
	multiple float64 // mean offered rate, × the resource's capacity at its first service time
	burst    *burst  // nil for none; the rate between bursts is lowered so that the mean stays multiple
	scale    float64 // service time, × the configured one: 2 halves the capacity; 0 means 1
}

// segment is a stretch of constant offered rate.
type segment struct {
	from, to time.Duration // since the start of the run
	rate     float64       // calls/s
	phase    int
}

// segments cuts phases into stretches of constant rate, for a resource
// of capacity calls/s.
func segments(phases []phase, capacity float64) []segment {
	var segs []segment
	var at time.Duration
	for p, ph := range phases {
		end := at + ph.length
		if b := ph.burst; b != nil && b.length > 0 && b.every > b.length {
			between := (ph.multiple*float64(b.every) - b.multiple*float64(b.length)) / float64(b.every-b.length)
			between = max(0, between)
			for from := at; from < end; from += b.every {
				mid := min(end, from+b.every-b.length)
				segs = append(segs, segment{from, mid, between * capacity, p})
				if mid < end {
					segs = append(segs, segment{mid, min(end, from+b.every), b.multiple * capacity, p})
				}
			}
		} else {
			segs = append(segs, segment{at, end, ph.multiple * capacity, p})
		}
		at = end
	}
	return segs
}

// arrival is one call of the schedule.
type arrival struct {
	at    time.Duration // when it is due, since the start of the run
	level criticality.Level
	draw  float64 // its service time, × the mean
	phase int
}

// schedule draws the calls of phases from rng: Poisson arrivals at each
// segment's rate (a fresh start at each boundary, which the process's lack
// of memory allows), levels in the proportions of mix, and service times
// of 1 (× the mean) or, when heavy, lognormal of mean 1.
func schedule(rng *rand.Rand, phases []phase, capacity float64, heavy bool) []arrival {
	var out []arrival
	for _, s := range segments(phases, capacity) {
		if s.rate <= 0 {
			continue
		}
		t := float64(s.from)
		for {
			t += rng.ExpFloat64() / s.rate * float64(time.Second)
			if t >= float64(s.to) {
				break
			}
			a := arrival{at: time.Duration(t), level: drawLevel(rng.Float64()), draw: 1, phase: s.phase}
			if heavy {
				a.draw = math.Exp(heavySigma*rng.NormFloat64() - heavySigma*heavySigma/2)
			}
			out = append(out, a)
		}
	}
	return out
}

// drawLevel maps u in [0, 1) to a level in the proportions of mix,
// SHEDDABLE from 0.
func drawLevel(u float64) criticality.Level {
	for i := range mix {
		if u < mix[i] {
			return criticality.Sheddable + criticality.Level(i)
		}
		u -= mix[i]
	}
	return criticality.CriticalPlus
}

// resource is the naive handler: W slots, each held for the service time
// by one call. A call waits for a free slot however long it takes, holds
// it (time.Sleep), and answers 200 OK, whether or not its caller is still
// there; when it finishes work for a caller that had gone, it notes the call.
// Closing it (at the end of a run, once every caller has had its answer
// or given up) sends the calls still waiting away without work. It notes
// each hold of a slot: how busy the slots were, and how much longer than
// asked a hold took (the timer, the scheduler), bound what any server in
// front of it can serve.
//
// A sleep runs past what it asks, by the timer's granularity and the
// scheduler's delay: 0.3–0.6 ms idle on the machine of docs/design,
// 0.5–0.9 ms under load, 3 % of a 20 ms hold. So that the resource has
// the capacity W ÷ S that every share is measured against, a hold sleeps
// S less that overrun, measured before the run (see timerOverrun). What a
// busy CPU adds during the run is the machine's, and shows in "a hold
// past S".
type resource struct {
	slots  chan struct{}
	closed chan struct{}
	start  time.Time
	mean   time.Duration // the service time, at scale 1
	// From scaleAt on (since start; 0 for never), the service time is
	// multiplied by scale.
	scaleAt time.Duration
	scale   float64
	inside  atomic.Int64 // calls in ServeHTTP
	// late is how long a sleep runs past what it asks, on the machine
	// idle (timerOverrun): a hold sleeps that much less.
	late time.Duration
	once sync.Once

	mu    sync.Mutex
	holds []hold // guarded by mu
	// gone is the calls, by their callHeader (-1 without one), whose
	// work finished after their callers had gone; guarded by mu.
	gone []int
}

// hold is a slot held by one call, since the resource's start: from
// and to, and the service time the call asked for.
type hold struct {
	from, to, asked time.Duration
}

func newResource(w int, mean time.Duration, start time.Time) *resource {
	r := &resource{slots: make(chan struct{}, w), closed: make(chan struct{}), start: start, mean: mean, scale: 1}
	for range w {
		r.slots <- struct{}{}
	}
	return r
}

var okBody = []byte("ok\n")

// overrunSamples is how many sleeps timerOverrun takes the median of.
const overrunSamples = 11

// overruns caches timerOverrun's measures, by the duration asked.
var overruns struct {
	sync.Mutex
	of map[time.Duration]time.Duration
}

// timerOverrun is how long a sleep of d runs past d on this machine,
// measured once for each d (before a run, the machine idle): the median
// of overrunSamples sleeps one after another.
func timerOverrun(d time.Duration) time.Duration {
	overruns.Lock()
	defer overruns.Unlock()
	if o, ok := overruns.of[d]; ok {
		return o
	}
	samples := make([]time.Duration, overrunSamples)
	for i := range samples {
		t := time.Now()
		time.Sleep(d)
		samples[i] = time.Since(t) - d
	}
	o := medianOverrun(samples, d)
	if overruns.of == nil {
		overruns.of = make(map[time.Duration]time.Duration)
	}
	overruns.of[d] = o
	return o
}

// medianOverrun is the median of samples, sleeps' overruns of d, within
// [0, d/4]: a machine whose sleeps run later than that is too busy to
// measure the timer on, and a hold keeps three quarters of S at least.
// It sorts samples.
func medianOverrun(samples []time.Duration, d time.Duration) time.Duration {
	if len(samples) == 0 {
		return 0
	}
	slices.Sort(samples)
	return min(max(samples[len(samples)/2], 0), d/4)
}

func (r *resource) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.inside.Add(1)
	defer r.inside.Add(-1)
	draw := 1.0
	if v, err := strconv.ParseFloat(req.Header.Get(drawHeader), 64); err == nil && v > 0 {
		draw = v
	}
	select {
	case <-r.slots:
	case <-r.closed:
		return
	}
	d := time.Duration(draw * float64(r.mean))
	if r.scaleAt > 0 && time.Since(r.start) >= r.scaleAt {
		d = time.Duration(float64(d) * r.scale)
	}
	from := time.Since(r.start)
	time.Sleep(max(0, d-r.late))
	h := hold{from: from, to: time.Since(r.start), asked: d}
	r.slots <- struct{}{}
	r.mu.Lock()
	r.holds = append(r.holds, h)
	if req.Context().Err() != nil {
		i, err := strconv.Atoi(req.Header.Get(callHeader))
		if err != nil {
			i = -1
		}
		r.gone = append(r.gone, i)
	}
	r.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(okBody)
}

// close sends the waiting calls away and waits for those at work, for
// at most limit.
func (r *resource) close(limit time.Duration) {
	r.once.Do(func() { close(r.closed) })
	for deadline := time.Now().Add(limit); r.inside.Load() > 0 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
}

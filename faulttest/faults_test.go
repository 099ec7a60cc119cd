package faulttest

import (
	"math/rand/v2"
	"time"

	"github.com/srebreaker/srebreaker/breaker"
)

// uniform returns a draw of a virtual time from lo to hi.
func uniform(lo, hi time.Duration) func(r *rand.Rand) time.Duration {
	return func(r *rand.Rand) time.Duration { return lo + time.Duration(r.Int64N(int64(hi-lo)+1)) }
}

// The faults, each a toxic on the answers' way back (downstream) or the
// proxy disabled. A toxic's real delays are real; what an admitted call
// takes in virtual time, which the breakers read, is the fault's latency.
var (
	// blackHole drops every byte of the answers and never closes the
	// connection: the dependency stops answering. Its calls end when their
	// client gives up. Removing the toxic closes the connections it held
	// (setting its toxicity to 0 instead races in toxiproxy); the harness
	// holds what their calls get until their deadline, so that the hang's
	// calls are still out after healing, as those of a hang whose
	// connections stay silent.
	blackHole = fault{
		name:  "blackHole",
		on:    func(p *proxy) { p.add("timeout", "downstream", `"timeout": 0`) },
		off:   func(p *proxy) { p.remove("timeout", "downstream") },
		hangs: true,
	}
	// latencyJitter delays the answers 10 ± 8 ms of real time; in virtual
	// time a call takes 30 to 60 ms, within what the dependency normally
	// takes (see normal).
	latencyJitter = fault{
		name:    "latencyJitter",
		on:      func(p *proxy) { p.add("latency", "downstream", `"latency": 10, "jitter": 8`) },
		off:     func(p *proxy) { p.remove("latency", "downstream") },
		latency: uniform(30*time.Millisecond, 60*time.Millisecond),
	}
	// resetPeer resets each connection as soon as an answer comes: the
	// calls fail at once (1 to 5 ms).
	resetPeer = fault{
		name:    "resetPeer",
		on:      func(p *proxy) { p.add("reset_peer", "downstream", `"timeout": 0`) },
		off:     func(p *proxy) { p.remove("reset_peer", "downstream") },
		latency: uniform(time.Millisecond, 5*time.Millisecond),
	}
	// down disables the proxy: its connections close, new ones are
	// refused.
	down = fault{
		name:    "down",
		on:      func(p *proxy) { p.disable() },
		off:     func(p *proxy) { p.enable() },
		latency: uniform(time.Millisecond, 5*time.Millisecond),
	}
	// slicer cuts the answers into pieces of 64 ± 32 bytes, 20 µs apart:
	// a calls still succeeds, in normal time.
	slicer = fault{
		name: "slicer",
		on: func(p *proxy) {
			p.add("slicer", "downstream", `"average_size": 64, "size_variation": 32, "delay": 20`)
		},
		off: func(p *proxy) { p.remove("slicer", "downstream") },
	}
	// slowdown delays the answers 40 ± 10 ms of real time; in virtual
	// time a call takes 300 to 500 ms, more than the 250 ms the breakers
	// are told a call may take (WithSlowCall).
	slowdown = fault{
		name:    "slowdown",
		on:      func(p *proxy) { p.add("latency", "downstream", `"latency": 40, "jitter": 10`) },
		off:     func(p *proxy) { p.remove("latency", "downstream") },
		latency: uniform(300*time.Millisecond, 500*time.Millisecond),
		opts:    []breaker.Option{breaker.WithSlowCall(250 * time.Millisecond)},
	}
)

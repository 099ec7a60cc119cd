// Package expvarbreaker publishes the state of a registry's breakers
// through the standard library's expvar, as one JSON map from breaker name
// to its figures: what /debug/vars serves. Any [breaker.Source] will do:
// [breaker.DefaultRegistry] holds the breakers of [breaker.Get] and,
// unless given another registry, those of httpbreaker's Transports and
// Handlers and grpcbreaker's interceptors.
//
// A breaker that has counted a call at a level other than the default
// (see `criticality.Level` and [breaker.Stats.Leveled]) also has its
// figures by level, under "criticalities"; the others have none.
// A breaker that holds an operator's override (see [breaker.Breaker.SetOverride])
// has it under "override": its mode, reason, author, when it was set,
// when it ends, and the calls it dropped.
//
// Importing expvar, as this package does, registers /debug/vars on
// http.DefaultServeMux.
package expvarbreaker

import (
	"expvar"
	"time"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/internal/distinct"
)

// Figures is what is published per breaker: [breaker.Stats] with JSON names.
type Figures struct {
	// In the window.
	Successes int64 `json:"successes"`
	Failures  int64 `json:"failures"`
	Drops     int64 `json:"drops"`
	// Since the breaker was made.
	Requests       int64 `json:"requests_total"`
	TotalSuccesses int64 `json:"successes_total"`
	TotalFailures  int64 `json:"failures_total"`
	TotalDrops     int64 `json:"drops_total"`

	DropProbability float64  `json:"drop_probability"`
	Reasons         []Reason `json:"reasons"`

	// Criticalities holds the figures of each level, by its name
	// (CRITICAL_PLUS, CRITICAL, SHEDDABLE_PLUS, SHEDDABLE), for a breaker
	// that has counted a call at a level other than the default; nil, and
	// left out of the JSON, for the others.
	Criticalities map[string]LevelFigures `json:"criticalities,omitempty"`

	// Override is the operator's override in force on the breaker (see
	// [breaker.Breaker.SetOverride]); nil, and left out of the JSON, when there is
	// none.
	Override *Override `json:"override,omitempty"`
}

// Override is an override in force, as published in Figures:
// `override.Active` with JSON names.
type Override struct {
	// Mode is "shed_all" or "shed_none".
	Mode   string `json:"mode"`
	Reason string `json:"reason"`
	By     string `json:"by"`
	// SetAt and Expires are on the breaker's clock.
	SetAt   time.Time `json:"set_at"`
	Expires time.Time `json:"expires"`
	// Drops counts the calls the override dropped since it was set; they
	// are not in the drops above.
	Drops int64 `json:"drops"`
}

// LevelFigures is what is published per level of a breaker:
// `criticality.Stats` with JSON names, as in Figures.
type LevelFigures struct {
	// In the window.
	Successes int64 `json:"successes"`
	Failures  int64 `json:"failures"`
	Drops     int64 `json:"drops"`
	// Since the breaker was made.
	Requests       int64 `json:"requests_total"`
	TotalSuccesses int64 `json:"successes_total"`
	TotalFailures  int64 `json:"failures_total"`
	TotalDrops     int64 `json:"drops_total"`

	DropProbability float64 `json:"drop_probability"`
}

// Reason is a failure reason, newest first in Figures.
type Reason struct {
	At   time.Time `json:"at"`
	Text string    `json:"text"`
}

// Func returns an expvar.Func whose value is a map from the name of each of
// src's breakers that reports stats (see [breaker.Breaker.Stats]) to its Figures,
// read anew each time the variable is read. A name that is not valid
// UTF-8 has each invalid byte written as \xNN, and a key that two breakers
// would share gets " (2)", " (3)" and so on: two breakers are never merged
// into one key. src is usually a *[breaker.Registry]; a type of your own
// with a Range method lists breakers that no registry holds. Publish it
// with expvar.Publish, which panics if the name is taken:
//
//	expvar.Publish("breakers", expvarbreaker.Func(breaker.DefaultRegistry()))
func Func(src breaker.Source) expvar.Func {
	return func() any {
		var names []string
		var stats []breaker.Stats
		src.Range(func(name string, b breaker.Breaker) bool {
			if s := b.Stats(); !s.Unguarded {
				names, stats = append(names, name), append(stats, s)
			}
			return true
		})
		out := make(map[string]Figures, len(names))
		for i, key := range distinct.Names(names) {
			out[key] = figures(stats[i])
		}
		return out
	}
}

func figures(s breaker.Stats) Figures {
	f := Figures{
		Successes: s.Successes, Failures: s.Failures, Drops: s.Drops,
		Requests:       s.TotalSuccesses + s.TotalFailures + s.TotalDrops,
		TotalSuccesses: s.TotalSuccesses, TotalFailures: s.TotalFailures, TotalDrops: s.TotalDrops,
		DropProbability: s.DropProbability,
		Reasons:         make([]Reason, len(s.Reasons)),
	}
	for i, r := range s.Reasons {
		f.Reasons[i] = Reason{At: r.At, Text: r.Text}
	}
	if o := s.Override; o != nil {
		f.Override = &Override{Mode: o.Mode.String(), Reason: o.Reason, By: o.By,
			SetAt: o.SetAt.Round(0), Expires: o.Expires.Round(0), Drops: o.Drops}
	}
	if s.Leveled() {
		f.Criticalities = make(map[string]LevelFigures, len(s.Criticalities))
		for _, c := range s.Criticalities {
			f.Criticalities[c.Level.String()] = LevelFigures{
				Successes: c.Successes, Failures: c.Failures, Drops: c.Drops,
				Requests:       c.TotalSuccesses + c.TotalFailures + c.TotalDrops,
				TotalSuccesses: c.TotalSuccesses, TotalFailures: c.TotalFailures, TotalDrops: c.TotalDrops,
				DropProbability: c.DropProbability,
			}
		}
	}
	return f
}

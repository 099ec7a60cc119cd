package statuspage

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/benbjohnson/clock"
	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/criticality"
	"github.com/srebreaker/srebreaker/internal/distinct"
)

const (
	// DefaultLimit is how many breakers a page shows by default; see
	// [WithLimit].
	DefaultLimit = 100
	// maxLimit is the largest limit WithLimit accepts.
	maxLimit = 10000

	// maxNameBytes is where a breaker's name is cut on the page and in the
	// JSON: names come from outside (hosts, routes) and may be long.
	maxNameBytes = 200
)

// ErrInvalidOption is wrapped by the error [New] returns, and [MustNew]
// panics with, when an option or the source is invalid; the full text
// names the option and its value. Test it with errors.Is.
var ErrInvalidOption = errors.New("statuspage: invalid option")

// Option configures a [Page] made by [New] or [MustNew].
type Option func(*options)

type options struct {
	clock clock.Clock
	limit int
}

// WithClock sets the clock that stamps the samples of the charts and the
// snapshot's time (of its methods, the Page reads Now alone): clock.New()
// from github.com/benbjohnson/clock, the system clock, by default, and
// clock.NewMock() in tests, the clock type every package of this module
// takes. Give it the clock the
// breakers read, so that the page's times and the reasons' agree. A nil
// clock is an error from [New].
func WithClock(c clock.Clock) Option {
	return func(o *options) { o.clock = c }
}

// WithLimit sets how many breakers the page shows at most, and so how many
// histories it keeps: [DefaultLimit] by default, from 1 to 10000. When
// the source holds more, the page shows those holding an operator's
// override, then those of servers overloaded now or holding their queue
// short, then those with the highest drop probability (then the most
// failures, then by name), and says how many it left out. Another value
// is an error from [New].
func WithLimit(n int) Option {
	return func(o *options) { o.limit = n }
}

func (o options) validate() error {
	if o.clock == nil {
		return fmt.Errorf("%w: WithClock(nil): a clock is required", ErrInvalidOption)
	}
	if o.limit < 1 || o.limit > maxLimit {
		return fmt.Errorf("%w: WithLimit(%d): must be between 1 and %d", ErrInvalidOption, o.limit, maxLimit)
	}
	return nil
}

// Page is an http.Handler that serves the status page of a source's
// breakers, at any path it is mounted on: the page for GET and HEAD, its
// data as JSON ([Snapshot]) with the query ?format=json. Each request also
// samples the drop probability of the breakers shown, for the charts.
//
// A Page is safe for concurrent use by multiple goroutines.
type Page struct {
	src   breaker.Source
	clock clock.Clock
	limit int

	mu        sync.Mutex
	histories map[string]*history // guarded by mu; by breaker name, those shown last
}

// New returns a Page that shows the breakers of src, usually a
// *[breaker.Registry] such as [breaker.DefaultRegistry]; breakers that
// record nothing (Stats.Unguarded, see [breaker.Stats]) are left out. It
// returns an error wrapping [ErrInvalidOption], naming the option and its
// value, when an option is nil or out of its range, or src is nil.
func New(src breaker.Source, opts ...Option) (*Page, error) {
	o := options{clock: clock.New(), limit: DefaultLimit}
	for _, opt := range opts {
		if opt == nil {
			return nil, fmt.Errorf("%w: a nil Option was given", ErrInvalidOption)
		}
		opt(&o)
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	if src == nil {
		return nil, fmt.Errorf("%w: New(nil): a source of breakers is required", ErrInvalidOption)
	}
	return &Page{src: src, clock: o.clock, limit: o.limit, histories: make(map[string]*history)}, nil
}

// MustNew is like [New] but panics on an error, for literals in code.
func MustNew(src breaker.Source, opts ...Option) *Page {
	p, err := New(src, opts...)
	if err != nil {
		panic(err)
	}
	return p
}

// ServeHTTP serves the page, or with ?format=json its [Snapshot]. Methods
// other than GET and HEAD get 405, other formats 400.
func (p *Page) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "statuspage: method "+r.Method+" not allowed: want GET or HEAD", http.StatusMethodNotAllowed)
		return
	}
	format, ok := queryFormat(r.URL.RawQuery)
	if !ok {
		http.Error(w, fmt.Sprintf("statuspage: format %q: want json or html", format), http.StatusBadRequest)
		return
	}
	// json.Marshal writes <, > and & as \u003c, \u003e and \u0026, and
	// U+2028 and U+2029 escaped too: the data can be put inside a script
	// element as it is, with no way out of it.
	data, err := json.Marshal(p.Snapshot())
	if err != nil { // a Snapshot holds only strings, numbers and times
		http.Error(w, "statuspage: "+err.Error(), http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	if format == "json" {
		h.Set("Content-Type", "application/json; charset=utf-8")
		_, _ = w.Write(append(data, '\n'))
		return
	}
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Frame-Options", "DENY")
	var b bytes.Buffer
	b.Grow(len(pageHead) + len(data) + len(pageTail))
	b.WriteString(pageHead)
	b.Write(data)
	b.WriteString(pageTail)
	_, _ = w.Write(b.Bytes())
}

// Snapshot is what the page shows, and what ?format=json returns.
type Snapshot struct {
	// Time is when the snapshot was taken, by the Page's clock.
	Time time.Time `json:"time"`
	// Total is how many breakers of the source report stats; Breakers holds
	// at most the Page's limit of them (see [WithLimit]).
	Total int `json:"total"`
	// Breakers are the breakers shown, by name.
	Breakers []Breaker `json:"breakers"`
}

// Breaker is what the page shows of one breaker: [breaker.Stats] with JSON
// names, and the history of its drop probability.
type Breaker struct {
	// Name is the breaker's name, as valid UTF-8 (each invalid byte written
	// as \xNN), cut to 200 bytes, and distinct within the snapshot (" (2)"
	// and so on added when two names would read the same).
	Name string `json:"name"`
	// DropProbability is the probability that a call asking now is
	// dropped, from 0 to 1.
	DropProbability float64 `json:"drop_probability"`

	// Requests are the calls the window holds: Successes + Failures + Drops.
	Requests  int64 `json:"requests"`
	Successes int64 `json:"successes"`
	Failures  int64 `json:"failures"`
	Drops     int64 `json:"drops"`
	// The same since the breaker was made.
	TotalRequests  int64 `json:"requests_total"`
	TotalSuccesses int64 `json:"successes_total"`
	TotalFailures  int64 `json:"failures_total"`
	TotalDrops     int64 `json:"drops_total"`

	// Reasons are the newest failure reasons, newest first.
	Reasons []Reason `json:"reasons"`
	// Criticalities holds the window by criticality level, highest first,
	// for a breaker that has counted a call at a level other than the
	// default; nil, and left out of the JSON, for the others.
	Criticalities []Level `json:"criticalities,omitempty"`
	// Override is the operator's override in force on the breaker (see
	// [breaker.Breaker.SetOverride]); nil, and left out of the JSON, when there is
	// none. The page shows it; it offers no way to set or clear one.
	Override *Override `json:"override,omitempty"`
	// Overload is what the overload limit of a server guarded under the
	// breaker's name holds (httpbreaker's Handler and the other server
	// integrations; see [breaker.OverloadStats]); nil, and left out of the
	// JSON, for a breaker that no server uses.
	Overload *Overload `json:"overload,omitempty"`
	// History holds the drop probability sampled over the last minute,
	// oldest first, at most one sample a second: one per second in which
	// the page or its JSON was requested.
	History []Sample `json:"history"`
}

// Reason is a failure reason and when it was reported.
type Reason struct {
	At   time.Time `json:"at"`
	Text string    `json:"text"`
}

// Override is an operator's override in force on a breaker:
// `override.Active` with JSON names.
type Override struct {
	// Mode is "shed_all" (every call dropped) or "shed_none" (every call
	// admitted).
	Mode string `json:"mode"`
	// Reason and By say why and by whom it was set, as the breaker keeps
	// them: at most 256 bytes each.
	Reason string `json:"reason"`
	By     string `json:"by"`
	// SetAt and Expires are when it was set and when it ends, on the
	// breaker's clock.
	SetAt   time.Time `json:"set_at"`
	Expires time.Time `json:"expires"`
	// Drops counts the calls it dropped since it was set; they are not in
	// the breaker's Drops.
	Drops int64 `json:"drops"`
}

// Overload is what a server's overload limit holds:
// [breaker.OverloadStats] with JSON names.
type Overload struct {
	// Limit is how many calls the server lets into its handlers at once,
	// as learned from their latency.
	Limit float64 `json:"limit"`
	// InFlight is the calls in the handlers now, Queued those waiting for
	// room.
	InFlight int `json:"in_flight"`
	Queued   int `json:"queued"`
	// Overloaded is true while calls arrive faster than the handlers serve
	// them, and the lowest levels' calls are rejected first.
	Overloaded bool `json:"overloaded"`
	// QueueHeld is true while, not overloaded, calls arrive about as fast
	// as the handlers serve them and the queue, which has stood for
	// seconds, is held short: its excess is rejected, the lowest levels'
	// first.
	QueueHeld bool `json:"queue_held"`
	// Rejected counts the calls rejected for want of room since the server
	// was made, by criticality level, highest first: always the four
	// levels.
	Rejected []Rejected `json:"rejected"`
}

// Rejected is how many calls of one criticality level a server's overload
// limit rejected.
type Rejected struct {
	// Criticality is the level's name: CRITICAL_PLUS, CRITICAL,
	// SHEDDABLE_PLUS or SHEDDABLE.
	Criticality string `json:"criticality"`
	Calls       int64  `json:"calls"`
}

// Level is what a breaker's window holds of one criticality level.
type Level struct {
	// Criticality is the level's name: CRITICAL_PLUS, CRITICAL,
	// SHEDDABLE_PLUS or SHEDDABLE.
	Criticality string `json:"criticality"`
	// Calls are the calls asked at this level in the window, admitted or
	// dropped; Drops those dropped, Successes and Failures those admitted
	// that finished.
	Calls     int64 `json:"calls"`
	Successes int64 `json:"successes"`
	Failures  int64 `json:"failures"`
	Drops     int64 `json:"drops"`
	// DropProbability is the probability that a call of this level asking
	// now is dropped.
	DropProbability float64 `json:"drop_probability"`
}

// Sample is the drop probability of a breaker at a time.
type Sample struct {
	At              time.Time `json:"at"`
	DropProbability float64   `json:"drop_probability"`
}

// shown is a breaker picked for the page: its key in the histories and its
// stats.
type shown struct {
	name  string
	stats breaker.Stats
}

// Snapshot takes a snapshot of the source's breakers, as ?format=json
// returns it, and samples their drop probability for the charts.
func (p *Page) Snapshot() Snapshot {
	picked, total := p.pick()
	now := p.clock.Now()

	names := make([]string, len(picked))
	for i, s := range picked {
		names[i] = cut(s.name, maxNameBytes)
	}
	names = distinct.Names(names)
	out := Snapshot{Time: now, Total: total, Breakers: make([]Breaker, len(picked))}
	for i, s := range picked {
		out.Breakers[i] = status(names[i], s.stats)
	}

	p.mu.Lock()
	kept := make(map[string]*history, len(picked))
	for i, s := range picked {
		h := p.histories[s.name]
		if h == nil {
			h = new(history)
		}
		h.add(now, s.stats.DropProbability)
		kept[s.name] = h
		out.Breakers[i].History = h.since(now.Add(-historySpan))
	}
	p.histories = kept // the histories of breakers no longer shown go
	p.mu.Unlock()
	return out
}

// pick returns the breakers to show, at most p.limit of them, by name, and
// how many report stats. It ranges over the source without holding p.mu, as
// the source may be the caller's code.
func (p *Page) pick() (picked []shown, total int) {
	p.src.Range(func(name string, b breaker.Breaker) bool {
		s := b.Stats()
		if s.Unguarded {
			return true
		}
		total++
		picked = append(picked, shown{name: name, stats: s})
		if len(picked) >= 2*p.limit { // memory stays within twice the limit
			slices.SortFunc(picked, worstFirst)
			clear(picked[p.limit:]) // let the cut ones' reasons go
			picked = picked[:p.limit]
		}
		return true
	})
	if len(picked) > p.limit {
		slices.SortFunc(picked, worstFirst)
		picked = picked[:p.limit]
	}
	slices.SortFunc(picked, func(a, b shown) int { return strings.Compare(a.name, b.name) })
	return picked, total
}

// worstFirst orders breakers holding an override first, then those of
// servers overloaded now or holding their queue short, then by drop
// probability, then failures in the window, highest first, then by name:
// a breaker an operator has a hand on stays on the page, and so does a
// server turning calls away, whose breaker drops none.
func worstFirst(a, b shown) int {
	switch {
	case (a.stats.Override != nil) != (b.stats.Override != nil):
		if a.stats.Override != nil {
			return -1
		}
		return 1
	case overloadedNow(a.stats) != overloadedNow(b.stats):
		if overloadedNow(a.stats) {
			return -1
		}
		return 1
	case a.stats.DropProbability != b.stats.DropProbability:
		if a.stats.DropProbability > b.stats.DropProbability {
			return -1
		}
		return 1
	case a.stats.Failures != b.stats.Failures:
		if a.stats.Failures > b.stats.Failures {
			return -1
		}
		return 1
	}
	return strings.Compare(a.name, b.name)
}

// overloadedNow reports whether s is a server's breaker whose overload
// limit finds the server overloaded, or holds its queue short: either way
// it rejects calls for want of room.
func overloadedNow(s breaker.Stats) bool {
	return s.Overload != nil && (s.Overload.Overloaded || s.Overload.QueueHeld)
}

// status returns what the page shows of a breaker named name with stats s,
// its history aside.
func status(name string, s breaker.Stats) Breaker {
	b := Breaker{
		Name:            name,
		DropProbability: s.DropProbability,
		Requests:        s.Successes + s.Failures + s.Drops,
		Successes:       s.Successes, Failures: s.Failures, Drops: s.Drops,
		TotalRequests:  s.TotalSuccesses + s.TotalFailures + s.TotalDrops,
		TotalSuccesses: s.TotalSuccesses, TotalFailures: s.TotalFailures, TotalDrops: s.TotalDrops,
		Reasons:       make([]Reason, len(s.Reasons)),
		Criticalities: levels(s),
	}
	for i, r := range s.Reasons {
		b.Reasons[i] = Reason{At: r.At, Text: r.Text}
	}
	if o := s.Override; o != nil {
		b.Override = &Override{Mode: o.Mode.String(), Reason: o.Reason, By: o.By,
			SetAt: o.SetAt.Round(0), Expires: o.Expires.Round(0), Drops: o.Drops}
	}
	b.Overload = overload(s.Overload)
	return b
}

// overloadLevels are the levels of breaker.OverloadStats.Rejected, in its
// order: highest first.
var overloadLevels = [len(breaker.OverloadStats{}.Rejected)]criticality.Level{
	criticality.CriticalPlus, criticality.Critical, criticality.SheddablePlus, criticality.Sheddable,
}

// overload returns what the page shows of a server's overload limit, or
// nil when there is none.
func overload(o *breaker.OverloadStats) *Overload {
	if o == nil {
		return nil
	}
	out := &Overload{Limit: o.Limit, InFlight: o.InFlight, Queued: o.Queued, Overloaded: o.Overloaded,
		QueueHeld: o.QueueHeld, Rejected: make([]Rejected, len(o.Rejected))}
	for i, n := range o.Rejected {
		out.Rejected[i] = Rejected{Criticality: overloadLevels[i].String(), Calls: n}
	}
	return out
}

// levels returns the figures of s by criticality level, highest first, or
// nil when the breaker has counted calls only at the default level. It is
// one of the two places that read criticality levels, with overload.
func levels(s breaker.Stats) []Level {
	if !s.Leveled() {
		return nil
	}
	out := make([]Level, 0, len(s.Criticalities))
	for _, c := range s.Criticalities {
		out = append(out, Level{Criticality: c.Level.String(), Calls: c.Calls, Successes: c.Successes,
			Failures: c.Failures, Drops: c.Drops, DropProbability: c.DropProbability})
	}
	return out
}

// cut returns s cut to at most n bytes, not inside a UTF-8 sequence, with
// "…" in place of what was cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const ellipsis = "…"
	i := n - len(ellipsis)
	for j := i; j > i-utf8.UTFMax && j > 0; j-- {
		if utf8.RuneStart(s[j]) {
			i = j
			break
		}
	}
	return s[:i] + ellipsis
}

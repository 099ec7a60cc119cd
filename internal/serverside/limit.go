package serverside

import (
	"context"
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/srebreaker/srebreaker"
	"github.com/srebreaker/srebreaker/breaker"

	"github.com/srebreaker/srebreaker/criticality"
	"github.com/srebreaker/srebreaker/internal/chain"
)

// ErrOverloaded is what [Limiter.Acquire] returns for a call the server
// has no room for: its transport answers it with its protocol's
// "overloaded" (HTTP 503, gRPC and Connect Unavailable), before the
// handler runs.
var ErrOverloaded = errors.New("serverside: overloaded")

// Limiter is a server's overload limit: it lets at most a learned number
// of calls into the handlers at once (the limit), holds the calls past it
// in a queue per criticality level, and passes them on as calls finish:
// the oldest first while the handlers serve them all, the highest level
// first in overload. It learns the limit from what it sees, with
// nothing to configure:
//
//   - The limit starts at 2 and doubles on each interval it is reached
//     in (4 noLoads long, 100 ms at most) until latency rises a quarter
//     above the lowest seen, or past twice the interval's spread when
//     that is more: few calls at first show the handlers' latency with
//     no queue inside. Till then the queue is bounded by maxQueue alone
//     and serves the newest first, so a backlog of the start ages out
//     with its callers. No probe (below) interrupts the start. The first
//     probe past it lets in a quarter of the limit, 2 calls at least:
//     calls at once queue inside handlers that serve fewer, and the
//     lowest latency the start saw may be a queue's. It lasts until its
//     calls tell noLoad (or 8 of them do not, or 5 s pass), and the
//     queue meanwhile holds what the calls it lets in serve in maxWait,
//     not what the start's limit would. The
//     interval that ended the start, its queue never empty (or grown
//     past chance) and its calls no heavy tail's, tells capacity
//     (below): every handler was busy in it.
//   - Then the limit follows the latency of the calls the handlers serve
//     (a gradient): limit × noLoad/latency + ½√limit, where an
//     interval's latency is the geometric mean of its calls' (a heavy
//     tail moves it by little) and noLoad is the lowest of the last
//     three probes' spans (3 s; more for slow handlers, below), or, for
//     handlers probed every second whose calls show no heavy tail, the
//     second lowest of those seconds' (a shared CPU's fast moment is no
//     latency the handlers keep); it moves up at once and halfway down.
//     An interval lasts until its calls tell its latency to within a
//     tenth (or a second: such an interval, a heavy tail's, is no noLoad
//     unless none is known), and a latency counts as above noLoad only
//     past twice that spread (and, past the start, the spread of the
//     reading noLoad comes from, when that was past a tenth). While
//     the handlers keep up, a call takes noLoad and the limit grows;
//     once they queue inside (a pool, a lock, a CPU), latency grows with
//     every call let in past what they can serve at once, and the limit
//     settles at that number plus ½√limit, enough to keep them busy.
//     Once a second past the start, while the limit is reached, a probe
//     lets in √limit calls fewer (in overload, as many as the handlers
//     serve at once, capacity × noLoad: their queue drains, and none of
//     them is idle)
//     until half an interval's calls let in during it have finished, or
//     two of them and two noLoads (a second at most). The latency of
//     those calls, which find the handlers' own queue drained, is a
//     noLoad once they tell it to within a tenth (at the spread the
//     intervals' calls show: a probe's first calls to finish are the
//     fastest of a heavy tail's); if it is no lower than the interval's
//     before (but for 5 % of noise), with no more calls let in than by
//     the probe before, the probe drained no queue, the handlers
//     themselves have slowed, and it replaces the lower noLoads
//     remembered. Handlers that take 200 ms or more are probed less
//     often, every ten noLoads (in whole seconds, up to 5 s), and noLoad
//     remembers three such spans: a probe of a handler that takes 200 ms
//     costs a slot for most of half a second.
//   - Calls that wait while none finishes for a second (or four noLoads)
//     double the limit: the handlers are waiting on something else (long
//     polls), which more calls cannot slow.
//   - A burst the handlers will serve in time waits in the queue: it is
//     rejected only past a second of expected wait (see maxWait), at
//     what the handlers serve once capacity is known, and never while
//     the queue holds fewer than the limit's calls (a noLoad's wait,
//     for handlers slower than a second). A queue that has
//     turned a call away serves the highest level first, and the newest
//     first within it, until it empties: its oldest calls would be served
//     as their callers give up.
//   - A queue that stands, never empty for 4 s and not draining, with
//     more calls than the handlers serve in 5 noLoads while calls arrive
//     at least as fast as capacity, holds that many at most until it
//     empties, served oldest first, and turns the excess away, the
//     lowest level's first: arrivals a few percent past capacity are
//     within chance of it (below) for seconds, and would grow the queue
//     to their callers' deadlines. It stands after 1.9 s already while
//     calls arrive past what the handlers have shown they serve (by more
//     than chance), and never while the handlers serve less than nine
//     tenths of that: a burst's queue drains, and so does a heavy tail's,
//     grown while a few slow calls held the slots.
//   - Overload is arrivals past capacity: while calls arrive faster than
//     the handlers have served them when busy, or at all over the last
//     half second (more than 1.3× over 2 s and 1.1× over the last half
//     second, or 2× over half a second; over 2 s, 1.3× the most they
//     served in the last 4 s, or over the 2 s: with a heavy tail, slow
//     calls hold every slot for a second or two, which is no overload;
//     or past capacity over the last half second while the queue lost
//     2 % of the calls that arrived, full or their callers gone: a
//     queue served oldest first that outgrew its callers' deadlines;
//     the windows count from the server's first call, and the 2 s rule
//     waits for 2 s of them),
//     the queue holds only √limit calls (the highest level up to 5
//     noLoads' wait, half a second at most) and serves the highest
//     level first, the newest first within it; the lowest level's oldest call
//     is rejected to make room, and a call that would be the lowest is
//     rejected at once; a call left waiting longer than 0.3 noLoad
//     (half as much again per level above the lowest) is rejected too,
//     so that what is served has not waited long, unless it is the only
//     call waiting (a slot that frees before another arrives would idle
//     without it; one that arrives goes first); no wait rejects the
//     highest level, which goes in in the order it came, its share of
//     the queue bounding its wait; and the limit goes no higher than
//     the calls the handlers serve at once, capacity × noLoad (Little's
//     law; noLoad times the ratio of the calls' mean latency to their
//     geometric mean, 2.2 for a heavy tail), plus ½√ of them: calls let
//     in past that only wait inside, where no level goes first. So
//     latency half as much again past noLoad is then the handlers
//     slowing more than a queue inside: the limit holds, so that the old
//     noLoad does not take it below the handlers' slots, and a probe
//     starts at once (not in up to a second; 300 ms after the last at
//     least). If its calls, the handlers' queue drained, still take half
//     as much again, they are the new noLoad, and capacity falls as many
//     times (as many calls at once, each longer). Overload ends when
//     arrivals fall below capacity over 2 s, or 0.9× over the last
//     half second. Each of these counts must be past its mark by more
//     than chance, twice the √ of the calls the mark stands for: a half
//     second of handlers that serve 10 calls a second holds 5.
//   - In overload the limit is also tried upward, since neither rule
//     above raises it once it is under the handlers' slots: a start that
//     ended on a slow moment reads capacity low, and noLoad read from
//     few calls at once is below what handlers that share a CPU take
//     with every slot busy, so the gradient and the cap hold the limit
//     there, and capacity read at it stays as low. A probe up lets in
//     upGain (1.25) times the limit for 200 ms, or until the handlers
//     have completed more calls a second than in the interval before
//     (5 % more, and past chance). Then the calls let in before found
//     room, so none of them queued inside: their latency is noLoad, and
//     what the handlers served is capacity. Otherwise the limit goes
//     back. The first probe up starts with the overload and, while they
//     find room, another follows at once; then one a second, twice as
//     long apart after each that finds none (8 s at most). Handlers
//     that complete fewer than 256 calls in 200 ms at 1.25 times their
//     rate get none: their count tells no such gain from chance.
//
// A call whose handler waits on a guarded call (see [Slot.Hold] and
// package chain) holds no room meanwhile, and that time is not its
// latency: the limit is for the server's own work.
//
// While the server is calm (no call waits, no overload, no probe, no
// rejection lately) and calls arrive faster than 4,000 a second, most go
// in and out without the lock and without reading the clock, but for one
// in period, which takes the locked path, moves the limiter on, and
// whose latency, a sample, counts toward the limit (see gate): the
// others' arrivals and completions are counted all the same. A call that
// finds the limit reached closes that path, and every rule above then
// sees every call.
//
// A level is never served less than a lower one: in overload a call
// waits only behind higher or equal levels, only the lowest level
// waiting is ever rejected, and a call below CRITICAL leaves the limit's
// headroom past what the handlers serve at once to the higher levels
// (see allowedFor); otherwise none is rejected, and calls go in
// in the order they came (by level, the lowest would wait longest, past
// its callers' deadlines, for no level's gain). The zero value is not
// usable: make one with [NewLimiter]. A Limiter is safe for concurrent
// use by multiple goroutines.
type Limiter struct {
	clock clock.Clock
	// system is true when clock is the system clock, read then as made
	// plus the monotonic time since (see now).
	system bool
	made   time.Time

	mu    sync.Mutex
	limit float64 // guarded by mu: calls let into the handlers at once
	// inFlight is the calls in the handlers, changed without the lock
	// by the fast path (see gate), with it otherwise.
	inFlight atomic.Int64

	// The fast path: while the server is calm (no call waits, none has
	// been turned away lately, no overload, no probe) and calls arrive
	// faster than samplesPerTick a tick, a call goes in without the lock
	// or the clock while the handlers hold fewer than the limit's calls,
	// but for one in period (of each level's arrivals), which takes the
	// locked path: it reads the clock, moves the limiter on, and its
	// latency, a sample of the calls', counts toward the limit. gate is
	// the limit's calls << periodBits | period while the fast path is
	// open, 0 while it is closed; gateSet is its value as last set
	// (guarded by mu). The fast path counts its arrivals in arrived, by
	// level, and their completions in finished; the locked path adds what
	// they counted since it last did (folded, foldedFinished: guarded by
	// mu) to the tick's counts (see fold).
	gate           atomic.Int64
	gateSet        int64
	arrived        [criticality.Levels]atomic.Int64
	finished       atomic.Int64
	folded         [criticality.Levels]int64
	foldedFinished int64
	period         int64 // guarded by mu: one call in period takes the locked path; 1 or more

	waiting  [criticality.Levels]waitList
	queued   int
	overload bool
	// stands is true while the queue stands (see standing), not
	// overloaded: it then holds standWait noLoads of calls at most,
	// served oldest first, and turns away the excess, the lowest level's
	// first.
	stands bool
	// starting is true until the limit first shows the handlers
	// queueing inside: till then it doubles on each interval it is
	// reached in, and the queue is bounded by maxQueue alone.
	starting bool
	lastMove time.Time // when a call last finished, or the queue last began
	// filled is true from when the queue, not overloaded, first turned
	// a call away (see queueCap) until it next empties.
	filled bool
	// stall wakes the limiter when calls have waited a stallSpan with
	// none finishing, should nothing else wake it; watching is true while
	// it is set.
	stall    *clock.Timer
	watching bool

	// The interval the limit is next adjusted from: its latencies, as
	// logarithms (see logLatencies).
	interval logLatencies
	full     bool // the limit was reached in the interval
	// The interval's start, the calls that finished in it (served or
	// not), those that arrived in it, and whether the queue emptied in
	// it: an interval that ends the start with the queue never empty, or
	// grown past chance, tells capacity (see adjust).
	intervalFrom    time.Time
	intervalDone    int
	intervalArrived int
	intervalEmptied bool
	latency         time.Duration // the last interval's
	nextAdjust      time.Time     // earliest end of the interval
	probing         bool          // the interval lets in √limit fewer calls
	deep            bool          // and it is the first past the start (see deepProbe)
	probeSec        int64         // the second of the last probe
	// probeEvery is how many seconds apart probes are: one, or more for
	// handlers slow enough that a second holds few calls (see
	// probeSpacing); noLoad remembers noLoadProbes of them.
	probeEvery int64
	// A probe's calls: those let in since probeStart that finished,
	// and those of the probes before it while they do not tell noLoad
	// to within maxSpread.
	probeStart time.Time
	probeCalls int // this probe's
	probed     logLatencies
	probes     int       // the probes in probed
	probedAt   int       // the calls let in at once by the last probe that told noLoad
	probeEnded time.Time // when the last probe ended
	// rising is true from an overload's start until a probe up finds no
	// room in the handlers (see endProbeUp): while it is, another follows
	// each that finds some at once. Otherwise the next may start at
	// upNext, upGap after the last. upProbing is true while one runs,
	// from the limit upFrom.
	rising    bool
	upNext    time.Time
	upGap     time.Duration
	upProbing bool
	upFrom    float64
	// What the handlers served, calls a second, and their calls'
	// latency, in the interval before the probe up.
	upRate    float64
	upLatency time.Duration

	// noLoad's recent minima, one per second.
	minima    [maxNoLoadSeconds]time.Duration
	minimaSec int64
	// The spread each minimum was told to, when past maxSpread (few
	// calls, or a heavy tail's); 0 otherwise.
	minimaSpread [maxNoLoadSeconds]float64

	// Arrivals and completions per tick, over the last rateTicks.
	ticks [rateTicks]tickCounts
	tick  int64 // the current tick's number (time / tickLength)
	// firstTick is the tick of the first call: the overload rule's
	// windows count from it (see window).
	firstTick  int64
	seen       bool // a call has arrived: firstTick is set
	emptySeen  bool // the queue was empty at some point of this tick
	idleSeen   bool // and the handlers had room to spare
	probedTick bool // a probe ran in this tick
	capacity   float64
	// The busy ticks capacity is next read from (see noteBusy): the calls
	// completed in them, how many they are, and the first's number.
	busyCalls int
	busyTicks int
	busyFrom  int64
	// stretch is how many times overloadWait a call may wait in this
	// overload (see waitStretch); 0 counts as 1.
	stretch float64
	// tail is the ratio of the served calls' mean latency to their
	// geometric mean, smoothed over intervals (see atOnce).
	tail float64
	// perCall is the standard deviation of the logarithm of one call's
	// latency, smoothed over intervals like tail.
	perCall float64
	// capacity's highest of each of the last peakSeconds seconds: the
	// overload rule's long window holds arrivals against it.
	peaks   [peakSeconds]float64
	peakSec int64
	// busySince is the first tick of the queue's stand: the one after
	// the last tick that saw it empty.
	busySince int64

	rejected [criticality.Levels]int64 // guarded by mu; since the limiter was made
	// lastArrival is the tick of each level's last arrival (see
	// allowedFor); guarded by mu.
	lastArrival [criticality.Levels]int64

	// What the limiter tells of its rejections (breaker.OverloadEvent):
	// tell is the tied breaker's, nil when it has no listener; the rest
	// is guarded by mu.
	tell         atomic.Pointer[func(breaker.OverloadEvent)]
	rejecting    bool
	rejectedTick int64                 // the tick of the last rejection
	episode      breaker.OverloadEvent // since rejecting last started
	toTell       [2]breaker.OverloadEvent
	nToTell      int // events noted to tell once mu is released (see unlock)
}

// counted names a count of tickCounts.
type counted int

const (
	arrivals counted = iota
	completions
	losses
)

// tickCounts are the counts of one tick.
type tickCounts struct {
	n           int64 // the tick's number, to tell a stale entry
	arrivals    int
	completions int
	// lost counts the calls the queue lost: turned away as it was full,
	// or whose callers left while they waited in it.
	lost int
	// least is the fewest calls the queue held at any point of the tick.
	least int
}

const (
	// initialLimit is the limit a Limiter starts with: few calls at a
	// time show the handlers' latency with little queue inside, whatever
	// their own limit. At 4, 2 handlers × 200 ms queued 2 calls behind 2
	// from the first, the start read its noLoad from that queue, and
	// doubled the limit to 8 or 16 before latency rose a quarter past it:
	// the calls let in waited up to 1.4 s inside the handlers, and 2 s of
	// twice their capacity served 83–96 % of it over the next 10 s, at 2
	// 96–102 % (the simulated server, eight seeds: see sim_test.go).
	initialLimit = 2
	// maxLimit bounds the limit, whatever the handlers' latency says.
	maxLimit = 100_000
	// samplesPerTick is how many calls a tick, at least, take the locked
	// path while the fast path is open (see Limiter.gate): a call in
	// period, where period is the last tick's arrivals over
	// samplesPerTick, maxPeriod at most. Below twice samplesPerTick
	// arrivals a tick, every call takes it. Two a millisecond keep the
	// ticks' counts within a millisecond of their time, and an interval
	// of the start (10 ms at least) sampled by twenty calls.
	samplesPerTick = 200
	maxPeriod      = 64
	periodBits     = 8
	// minSamples is how many calls an interval needs before the limit
	// moves on it, and minInterval how long it lasts at least; it lasts
	// until its latency is known to within maxSpread (the standard error
	// of its logarithm), or maxInterval.
	minSamples  = 8
	minInterval = 100 * time.Millisecond
	maxInterval = time.Second
	maxSpread   = 0.1
	// startEnd is the gradient that ends the start: the latency a
	// quarter above noLoad.
	startEnd = 0.8
	// startInterval is how long an interval of the start lasts at least,
	// in noLoads, minInterval at most: starting at 2 calls, handlers of
	// 5 ms that double it every 100 ms reach 32 slots in half a second,
	// and a surge of 0.9× their capacity queued 1,200 calls meanwhile.
	// minStartInterval bounds it below: a start that never reaches its
	// limit lasts as long as the traffic stays light, and handlers that
	// answer in microseconds would adjust every few calls.
	startInterval    = 4
	minStartInterval = 10 * time.Millisecond
	// tolerance is how many spreads an interval's latency may be above
	// noLoad by chance.
	tolerance = 2
	// noLoadProbes is how many probes' spans noLoad remembers (see
	// Limiter.probeEvery), and maxNoLoadSeconds how many seconds at most.
	noLoadProbes     = 3
	maxNoLoadSeconds = 16
	// trimmedSeconds is how many seconds' lowest latencies noLoad needs
	// before it sets the lowest aside (see Limiter.lowest).
	trimmedSeconds = 3
	// probeSpacing is how many noLoads apart probes are at least: a
	// probe lets in fewer calls, and a slow handler's probe lasts long.
	probeSpacing = 10
	// tickLength and rateTicks make the window arrivals are counted in.
	tickLength = 100 * time.Millisecond
	rateTicks  = 20
	// capacityWeight is how far a busy tick's rate moves capacity toward
	// it (see Limiter.noteBusy).
	capacityWeight = 0.2
	// quietTicks is breaker.OverloadQuiet in ticks.
	quietTicks = int64(breaker.OverloadQuiet / tickLength)
	// shortTicks is the short window of the overload rule, and countNoise
	// how many spreads of a count of arrivals the rule sets aside as
	// chance.
	shortTicks = 5
	countNoise = 2
	// longTicks are the long window's full ticks: the overload rule
	// judges as a tick begins, in the oldest's place.
	longTicks = rateTicks - 1
	// lostShare is the share of the calls that arrived over the short
	// window that the queue may lose (full, or its callers gone) before
	// an overload starts with arrivals past capacity: arrivals 5 % past
	// it lose those 5 % once the queue holds as much as the callers
	// wait, and an impatient caller now and then loses fewer.
	lostShare = 0.02
	// standTicks is how long a queue must stand, never empty, to be held
	// short (see Limiter.standing), and standWait how long, in noLoads,
	// its calls then wait at least, and at most once it is held: a burst
	// of three times the capacity for 200 ms, at 0.9× on average, queues
	// 2 noLoads for 4 handlers × 20 ms, and drains in 1.4 s. Unless
	// arrivals are past what the handlers have shown they serve, it must
	// stand standLongTicks.
	standTicks     = longTicks
	standLongTicks = int64(4 * time.Second / tickLength)
	standWait      = 5
	// slowedShare is the share of their peak below which handlers that
	// served a standing queue have slowed (see Limiter.standing): the
	// peak, the highest capacity of seconds, runs a few percent above
	// what they serve, 2–3 % for 32 handlers × 5 ms that the CPU bounds;
	// a heavy tail's slow spell served 55–78 % of it.
	slowedShare = 0.9
	// peakSeconds is how long the overload rule's long window remembers
	// the highest capacity (see Limiter.peak).
	peakSeconds = 4
	// tailWeight is the weight of an interval's ratio of mean to
	// geometric mean latency in Limiter.tail.
	tailWeight = 0.25
	// startTail is that ratio, at most, of the interval that ends the
	// start for it to tell capacity (see Limiter.adjust): 1.0–1.1 for a
	// queue inside handlers that take the same time each call, 2.2 on
	// average for a heavy tail's.
	startTail = 1.25
	// maxWait is how long a call may expect to wait in the queue while
	// the server is not overloaded, and maxQueue how many calls it holds
	// at most whatever the wait.
	maxWait  = time.Second
	maxQueue = 100_000
	// headroom and probeDepth are, in √limit, how many calls past what
	// the handlers serve at once the limit lets in, to keep them busy,
	// and how many fewer a probe lets in: more than the headroom, so
	// that a probe drains what the limit leaves queued inside and pulls
	// a limit too high down.
	headroom   = 0.5
	probeDepth = 1
	// highestWait is how long, in noLoads, the highest level's calls may
	// expect to wait in overload (see Limiter.queueCap).
	highestWait = 5
	// overloadWait is how long, in noLoads, a call may wait while the
	// server is overloaded: the queue then serves the newest first, and a
	// call left behind longer is rejected.
	overloadWait = 0.3
	// maxStretch is how many times overloadWait a call may wait at most,
	// in an overload just past capacity (see waitStretch).
	maxStretch = 3
	// stallTime is how long calls wait with none finishing, at least,
	// before the limit doubles.
	stallTime = time.Second
	// deepProbe is by how much the first probe past the start divides the
	// limit: the start read noLoad with initialLimit calls at once, which
	// queue inside handlers that serve fewer (2 slots of 200 ms), and no
	// later probe drains the queue its own noLoad comes from (in overload
	// a probe lets in capacity × noLoad).
	deepProbe = 4
	// maxDeepProbe is how long the first probe past the start lasts at
	// most, should two of its calls not finish before: the calls the
	// start let in drain first.
	maxDeepProbe = 5 * time.Second
	// maxProbe is how long a probe lasts at most, unless two noLoads are
	// longer (a second at most).
	maxProbe = 100 * time.Millisecond
	// probeNoise is how much lower than the interval's before a probe's
	// latency may be and still have drained no queue: a few percent
	// that timers and the scheduler add or take.
	probeNoise = 0.05
	// minReserving is how many calls at once the handlers must serve for
	// the limit's headroom to be kept for the higher levels in overload
	// (see Limiter.allowedFor).
	minReserving = 3
	// slowedGradient is the gradient below which, in overload, the
	// handlers are taken to have slowed rather than queued (a probe tells
	// which at once); slowedProbeGap is how long after a probe another
	// may start on it.
	slowedGradient = 2.0 / 3
	slowedProbeGap = 3 * minInterval
	// upGain is by how much a probe up raises the limit (see
	// Limiter.endProbeUp), and maxUpSpan how long it lasts at most. The
	// handlers must complete upCalls in maxUpSpan at upGain times their
	// rate for a probe up to run: a gain of a fifth in so many calls is
	// past chance (twice their √; see above). Probes up are upGap apart,
	// from minUpGap, doubled by each that finds no room, up to maxUpGap.
	upGain    = 1.25
	upCalls   = 256
	maxUpSpan = 2 * minInterval
	minUpGap  = time.Second
	maxUpGap  = 8 * time.Second
)

// NewLimiter returns a Limiter that reads time from c (the system clock
// when c is nil).
func NewLimiter(c clock.Clock) *Limiter {
	l := &Limiter{clock: c, limit: initialLimit, starting: true, probeEvery: 1, tail: 1, period: 1}
	if c == nil {
		l.clock, l.system, l.made = clock.New(), true, time.Now()
	}
	return l
}

// now reads the limiter's clock. The system clock is read as the time the
// limiter was made plus the monotonic time since: the monotonic clock
// alone costs about half of time.Now, read twice a call. (The limiter
// uses the wall time only to count whole seconds, and no later step of
// the system's wall clock moves them.)
func (l *Limiter) now() time.Time {
	if l.system {
		return l.made.Add(time.Since(l.made))
	}
	return l.clock.Now()
}

// Slot is a call let into the handlers: give it back with
// [Slot.Release] once the handler has answered.
type Slot struct {
	l     *Limiter
	start time.Time   // when it went in; zero for a call the fast path let in (see Limiter.gate)
	m     *chain.Mark // the request's, once held (see Slot.Hold)
}

// Hold gives m, the Mark of the request the slot is for, the slot's
// room: while a guarded call the request makes is out (see chain.Leave),
// the request holds no room in the limit, and that time is not its
// latency. Hold of the zero Slot does nothing.
func (s *Slot) Hold(m *chain.Mark) {
	if s.l == nil || m == nil {
		return
	}
	s.m = m
	m.Hold(s.l)
}

// Release gives the slot back: the next call waiting goes in (see
// Limiter for which). When served is true (the handler answered its
// caller, still there, and did not fail), the slot's latency, less its
// time on guarded calls, counts toward the limit: a failure's says
// nothing of the server's load (a dependency that fails at once, or hangs
// until the caller leaves), nor does that of a call ended early as its
// caller left.
// Release of the zero Slot does nothing.
func (s Slot) Release(served bool) {
	l := s.l
	if l == nil {
		return
	}
	if s.start.IsZero() {
		s.releaseFast()
		return
	}
	now := l.now()
	l.mu.Lock()
	l.advance(now)
	rtt := now.Sub(s.start)
	out := false
	if m := s.m; m != nil {
		a := &m.Away
		if out = a.Finish() > 0; out { // out on a guarded call: it holds no room now
			a.Total += now.Sub(a.Since)
		}
		rtt -= a.Total
	}
	if !out {
		l.inFlight.Add(-1)
	}
	l.lastMove = now
	if served && rtt > 0 {
		x := math.Log(float64(rtt))
		l.interval.add(x)
		l.interval.linear += float64(rtt)
		if l.probing && !s.start.Before(l.probeStart) {
			l.probeCalls++
			l.probed.add(x)
		}
	}
	l.ticks[l.tick%rateTicks].completions++
	l.intervalDone++
	l.handOff(now)
	l.unlock()
}

// releaseFast is Release of a slot the fast path let in (see
// Limiter.gate): its latency is no sample, and, unless the fast path has
// closed since (calls may wait for its room), it takes no lock. The room
// is given back before the gate is read, and a call that joins the queue
// closes the gate before it reads the calls in: one of the two sees the
// other, and the room goes to the call waiting.
func (s Slot) releaseFast() {
	l := s.l
	if s.m == nil || s.m.Away.Finish() == 0 { // out on a guarded call, it holds no room
		l.inFlight.Add(-1)
	}
	if l.gate.Load() != 0 {
		l.finished.Add(1)
		return
	}
	now := l.now()
	l.mu.Lock()
	l.advance(now)
	l.ticks[l.tick%rateTicks].completions++
	l.intervalDone++
	l.lastMove = now
	l.handOff(now)
	l.unlock()
}

// Leave implements chain.Room: a guarded call of m's request goes out,
// and, the first out, gives the request's room to the next call waiting.
func (l *Limiter) Leave(m *chain.Mark) {
	now := l.now()
	l.mu.Lock()
	a := &m.Away
	if first, _ := a.Out(); first {
		a.Since = now
		l.advance(now)
		l.inFlight.Add(-1)
		l.lastMove = now
		l.handOff(now)
	}
	l.unlock()
}

// Return implements chain.Room: a guarded call of m's request has ended,
// and, the last out, the request takes its room back, past the limit if
// the limit is reached: it was let in already.
func (l *Limiter) Return(m *chain.Mark) {
	now := l.now()
	l.mu.Lock()
	a := &m.Away
	if a.In() {
		a.Total += now.Sub(a.Since)
		l.inFlight.Add(1)
	}
	l.mu.Unlock()
}

// Acquire asks for a slot for a call at level (criticality.Default when
// not valid). It returns at once when the handlers have room; otherwise
// the call waits in the queue until a slot is handed to it, it is
// rejected ([ErrOverloaded]), or ctx ends (ctx's error: the caller has
// gone, and no answer is due).
func (l *Limiter) Acquire(ctx context.Context, level criticality.Level) (Slot, error) {
	s, _, err := l.acquire(ctx, level, nil)
	return s, err
}

// AcquireFor is Acquire for a call that b, the breaker of the server's
// key, admitted with promise p. A call let in at once keeps p. A call
// that must wait gives p up (srebreaker.Ignore) as it joins the queue,
// and, let in, takes a new promise from b at its level (AllowAt): b's
// hang watch counts a call out from when it was
// admitted, and the wait, the server's own load, is no hang of the
// dependency b judges. A probe (probe true: p is no promise of b's) keeps
// p through the wait. On an error, the promise held then is given up,
// and b's drop of the call let in (ErrServiceUnavailable, ctx's error) is
// returned as b returned it, its slot given back.
func (l *Limiter) AcquireFor(ctx context.Context, level criticality.Level, b breaker.Breaker, p srebreaker.Promise,
	probe bool) (Slot, srebreaker.Promise, error) {
	var giveUp srebreaker.Promise
	if !probe {
		giveUp = p
	}
	s, gaveUp, err := l.acquire(ctx, level, giveUp)
	if err != nil {
		if !gaveUp {
			srebreaker.Ignore(p)
		}
		return Slot{}, nil, err
	}
	if !gaveUp {
		return s, p, nil
	}
	p, err = AllowAt(b, ctx, level)
	if err != nil {
		s.Release(false)
		return Slot{}, nil, err
	}
	return s, p, nil
}

// acquire is Acquire; when the call must wait, it gives giveUp up
// (srebreaker.Ignore), unless nil, as the call joins the queue, and
// reports that it did.
func (l *Limiter) acquire(ctx context.Context, level criticality.Level, giveUp srebreaker.Promise) (Slot, bool, error) {
	s, w, err := l.join(level)
	if w == nil {
		return s, false, err
	}
	gaveUp := giveUp != nil
	if gaveUp {
		srebreaker.Ignore(giveUp)
	}

	select {
	case <-w.done:
	case <-ctx.Done():
		if l.quit(w) {
			putWaiter(w)
			return Slot{}, gaveUp, ctx.Err()
		}
		<-w.done
		if w.state == granted { // handed a slot as the caller left: give it on
			putWaiter(w)
			Slot{l: l, start: l.now()}.Release(false)
			return Slot{}, gaveUp, ctx.Err()
		}
	}
	state := w.state
	putWaiter(w)
	if state == rejected {
		return Slot{}, gaveUp, ErrOverloaded
	}
	s = Slot{l: l, start: l.now()}
	if err := ctx.Err(); err != nil { // the caller left as the slot came
		s.Release(false)
		return Slot{}, gaveUp, err
	}
	return s, gaveUp, nil
}

// join is a call's arrival at level: it returns the call's slot when the
// handlers have room, ErrOverloaded when the call is rejected at once,
// or else the waiter that joined the queue, whose done is sent on once a
// slot is handed to it or it is rejected (its state tells which).
func (l *Limiter) join(level criticality.Level) (Slot, *waiter, error) {
	if !level.Valid() {
		level = criticality.Default
	}
	counted := false
	if g := l.gate.Load(); g != 0 { // the fast path is open
		counted = true
		if l.arrived[level.Index()].Add(1)%(g&(1<<periodBits-1)) != 0 && l.tryEnter(g>>periodBits) {
			return Slot{l: l}, nil, nil
		}
	}
	now := l.now()
	l.mu.Lock()
	l.advance(now)
	if !l.seen {
		l.seen, l.firstTick = true, l.tick
	}
	if !counted { // else in arrived, which advance has added
		l.ticks[l.tick%rateTicks].arrivals++
		l.intervalArrived++
	}
	l.lastArrival[level.Index()] = l.tick
	if (l.queued == 0 || l.noneWaitsFrom(level.Index())) && l.tryEnter(int64(l.allowedFor(level.Index()))) {
		l.unlock()
		return Slot{l: l, start: now}, nil, nil
	}
	l.full = true
	if !l.room(level.Index()) {
		l.filled = l.filled || !l.stands
		l.noteRejected(level.Index())
		if !l.stands { // a standing queue turns away its excess: no loss
			l.ticks[l.tick%rateTicks].lost++
		}
		l.unlock()
		return Slot{}, nil, ErrOverloaded
	}
	if l.queued == 0 {
		l.lastMove, l.filled = now, false
	}
	if testHookQueue != nil {
		testHookQueue()
	}
	raced := l.closeGate() // calls now wait: none goes in past them
	w := getWaiter(level, now)
	l.waiting[level.Index()].pushBack(w)
	l.queued++
	l.trim()
	if raced {
		// A call let in by the fast path may have finished as this one
		// found no room: its room is this call's (see Slot.releaseFast).
		l.handOff(now)
	}
	l.watch(now)
	l.unlock()
	return Slot{}, w, nil
}

// testHookQueue, when set, is called as a call that found no room is
// about to join the queue, l.mu held: a test's fast path gives a room
// back there.
var testHookQueue func()

// tryEnter lets a call into the handlers while they hold fewer than n,
// and reports whether it did.
func (l *Limiter) tryEnter(n int64) bool {
	for {
		f := l.inFlight.Load()
		if f >= n {
			return false
		}
		if l.inFlight.CompareAndSwap(f, f+1) {
			return true
		}
	}
}

// setGate opens the fast path (see Limiter.gate) at the limit's calls
// while the server is calm and calls arrive fast enough to sample, and
// closes it otherwise. Callers hold l.mu.
func (l *Limiter) setGate() {
	var g int64
	if l.period > 1 && l.queued == 0 && !l.overload && !l.stands && !l.probing && !l.filled && !l.rejecting {
		g = int64(l.allowed())<<periodBits | l.period
	}
	if g != l.gateSet {
		l.gate.Store(g)
		l.gateSet = g
	}
}

// closeGate closes the fast path, and reports whether it was open.
// Callers hold l.mu.
func (l *Limiter) closeGate() bool {
	if l.gateSet == 0 {
		return false
	}
	l.gate.Store(0)
	l.gateSet = 0
	return true
}

// fold adds the fast path's counts (see Limiter.gate) to the current
// tick and interval: its arrivals, and their completions, since the
// last fold. A call that read the gate open just as it closed may count
// itself after the fold that followed: it is counted by the next, the
// gate open or not. Callers hold l.mu.
func (l *Limiter) fold() {
	c := &l.ticks[l.tick%rateTicks]
	for i := range l.arrived {
		a := l.arrived[i].Load()
		if n := int(a - l.folded[i]); n > 0 {
			c.arrivals += n
			l.intervalArrived += n
			l.lastArrival[i] = l.tick
		}
		l.folded[i] = a
	}
	f := l.finished.Load()
	n := int(f - l.foldedFinished)
	c.completions += n
	l.intervalDone += n
	l.foldedFinished = f
}

// quit takes w out of the queue, its caller gone, and reports whether it
// was still waiting; if not, a slot or a rejection was sent on w.done
// first.
func (l *Limiter) quit(w *waiter) bool {
	l.mu.Lock()
	if w.state != waiting {
		l.unlock()
		return false
	}
	l.waiting[w.level.Index()].remove(w)
	l.queued--
	l.advance(l.now())
	l.noteLeast()
	l.ticks[l.tick%rateTicks].lost++
	l.unlock()
	return true
}

// allowed is how many calls the handlers may hold now. Callers hold l.mu.
func (l *Limiter) allowed() int {
	n := l.limit
	if l.probing && l.deep {
		// 2 calls at least: one idles handlers of 2 slots, the fewest the
		// start knows of, while the queue grows past its callers.
		return max(2, int(n/deepProbe+0.5))
	}
	if l.probing {
		d := n - probeDepth*math.Sqrt(n)
		if l.overload {
			// What the handlers serve at once drains their queue as well,
			// and leaves none of them idle; unless it lets in no fewer
			// calls than the limit (noLoad itself too high: the probe is to
			// lower it).
			if w := math.Round(l.atOnce()); w > 0 && w < math.Round(n) {
				d = max(d, w)
			}
		}
		n = d
	}
	return max(1, int(n+0.5))
}

// allowedFor is how many calls the handlers may hold now for one of
// level (an index) to go in. In overload, a level below the default
// (CRITICAL) fills the slots only up to what the handlers serve at once
// (atOnce) while a higher level has arrived in this tick or the last:
// the limit's headroom past that, calls that would wait inside the
// handlers anyway, is kept for the higher levels (up to ½√limit of it,
// one call at least). A slot that frees with no higher call waiting
// still goes to a lower one, and the handlers stay as busy; but a lower
// call no longer takes the room that a higher one arriving just after
// would have had, to wait there behind it: it waits for a slot of its
// own, or is rejected. In the mix of 10 % CRITICAL_PLUS, 40 % CRITICAL,
// 20 % SHEDDABLE_PLUS and 30 % SHEDDABLE at twice the capacity of 4
// handlers × 20 ms, CRITICAL was served 70–72 %, SHEDDABLE_PLUS 33–34 %
// and SHEDDABLE 16–17 % without it, 80–81 %, 24 % and 10–11 % with it;
// at 4×, 32–33 %, 6–8 % and 2–3 % against 37 %, 2 % and under 1 %
// (SHEDDABLE_PLUS and SHEDDABLE would take none at all were the
// arrivals smooth); the served share of capacity moved by half a
// percent (the simulated server, seeds 1 and 2: see sim_test.go). It
// holds nothing back from handlers that serve fewer than minReserving
// calls at once, nor with a heavy tail (l.tail past startTail): there,
// a lower call held back for a slot of its own waits a large part of a
// call's time, and 2 handlers × 200 ms at 2× served 93, 95 and 96 % of
// their capacity at three seeds of eight, 96, 97 and 97 % without.
// Callers hold l.mu.
func (l *Limiter) allowedFor(level int) int {
	n := l.allowed()
	if !l.overload || l.starting || level >= criticality.Default.Index() || l.tail > startTail {
		return n
	}
	for j := level + 1; j < criticality.Levels; j++ {
		if l.tick-l.lastArrival[j] <= 1 {
			if w := l.atOnce(); w >= minReserving {
				kept := max(1, int(headroom*math.Sqrt(l.limit)+0.5))
				n = max(min(n, int(w+0.5)), n-kept, 1)
			}
			break
		}
	}
	return n
}

// noneWaitsFrom reports whether no call of level (an index) or above
// waits: the calls that do are of lower levels that allowedFor holds
// back, and a call of level goes in before them. Callers hold l.mu.
func (l *Limiter) noneWaitsFrom(level int) bool {
	for j := level; j < criticality.Levels; j++ {
		if l.waiting[j].len > 0 {
			return false
		}
	}
	return true
}

// queueCap is how many calls the queue holds now, counting those at
// level and above: while overloaded, √limit for the lowest level and one
// more for each level above, so that a higher level's burst finds room a
// lower level's does not; for the highest level, what the handlers serve
// in highestWait noLoads (half maxWait at most), or the limit if that is
// more. The highest level goes in first: a queue of its own calls is a
// burst of them, or the handlers pausing, and drains in that long.
// √limit alone is a small part of a noLoad on handlers with many slots,
// and a few moments with no slot freeing turned the highest level away:
// at 4× capacity, 32 handlers × 5 ms in process (bench/cmd/overload
// -scenarios configs -configs 32x5ms) served 88.9–93.2 % of
// CRITICAL_PLUS over five runs, 99.4–100 % with the limit. The limit, a
// noLoad's calls, still turned away 0.4–2.3 % of CRITICAL_PLUS in a step
// from 1× to 4× on 4 handlers × 20 ms: Poisson bursts of it, and the
// calls it queued, oldest first, before overload began. Callers hold
// l.mu.
func (l *Limiter) queueCap(level int) int {
	if l.overload {
		n := max(1, int(math.Sqrt(l.limit))) + level
		if level == criticality.Levels-1 {
			wait := min(highestWait*l.noLoad().Seconds(), maxWait.Seconds()/2)
			n = max(n, int(l.limit), int(l.capacity*wait))
		}
		return n
	}
	noLoad := l.noLoad()
	if noLoad <= 0 || l.starting {
		return maxQueue
	}
	// The queue drains at limit calls a noLoad; during the first probe
	// past the start, at the calls it lets in: the limit is the start's,
	// twice what the handlers took at least.
	drain := l.limit
	if l.probing && l.deep {
		drain = float64(l.allowed())
	}
	n := float64(maxWait) / float64(noLoad) * drain
	if l.capacity > 0 && !(l.probing && l.deep) {
		// The limit's calls a noLoad overstate the rate when they queue
		// inside the handlers: 4 calls let in on 2 handlers × 200 ms
		// finish 10 a second, not 20, and a queue of 20 waited 2 s.
		n = min(n, maxWait.Seconds()*l.capacity)
	}
	// It holds what drains in a noLoad at least: handlers slower than
	// maxWait (a noLoad of 3 s at a limit of 2 held no call, and turned
	// away every call past the limit at any load), and capacity read
	// while few calls came, each waiting for room until the stall rule
	// let it in, below one a second.
	n = max(n, drain)
	if l.stands {
		n = min(n, max(1, standWait*l.capacity*noLoad.Seconds()+float64(level)))
	}
	return int(min(n, maxQueue))
}

// room reports whether a call at level may join the queue: it holds
// fewer than the level's cap, or a lower level waits, whose oldest call
// trim will reject. Callers hold l.mu.
func (l *Limiter) room(level int) bool {
	if l.queued < l.queueCap(level) {
		return true
	}
	for i := 0; i < level; i++ {
		if l.waiting[i].len > 0 {
			return true
		}
	}
	return false
}

// trim rejects the oldest calls of the lowest levels waiting while the
// queue holds more than their level's cap. Callers hold l.mu.
func (l *Limiter) trim() {
	for i := 0; i < criticality.Levels; i++ {
		for l.waiting[i].len > 0 && l.queued > l.queueCap(i) {
			l.rejectOldest(i)
			l.filled = l.filled || !l.stands
		}
	}
}

// expire rejects the calls that have waited longer than overloadWait
// (stretched just past capacity: see waitStretch), the oldest first: at
// the lowest level, overloadWait; half as much again
// for each level above, but for the highest, which no wait rejects (its
// calls go in first, and its share of the queue bounds them). It leaves
// the only call waiting: a slot that frees before another call arrives
// would idle without it, and one that arrives goes in first (the newest
// first), which leaves it to the next expire. At 1.5× capacity, where the
// queue often holds one call, 4 handlers × 20 ms served 94.9–95.5 % of
// their capacity this way over five runs, 94.5–95.2 % over four without
// (bench/cmd/overload). Callers hold l.mu.
func (l *Limiter) expire(now time.Time) {
	span := overloadWait * max(1, l.stretch) * float64(l.noLoad())
	if span == 0 {
		return // no latency seen yet to bound a wait by
	}
	for i := range criticality.Levels - 1 {
		q := &l.waiting[i]
		bound := time.Duration(span * (1 + float64(i)/2))
		for q.head != nil && l.queued > 1 && now.Sub(q.head.since) > bound {
			l.rejectOldest(i)
		}
	}
}

// rejectOldest rejects the oldest call waiting at level index i.
// Callers hold l.mu.
func (l *Limiter) rejectOldest(i int) {
	w := l.waiting[i].popFront()
	l.queued--
	l.noteLeast()
	l.noteRejected(i)
	w.state = rejected
	w.done <- struct{}{}
}

// noteRejected counts a call rejected at level index i, and notes the
// event to tell when it is the first since the limiter last stopped
// rejecting. Callers hold l.mu.
func (l *Limiter) noteRejected(i int) {
	l.rejected[i]++
	l.rejectedTick = l.tick
	if !l.rejecting {
		l.rejecting = true
		l.episode = breaker.OverloadEvent{Rejecting: true, Since: l.now()}
		l.episode.Rejected[criticality.Levels-1-i]++
		l.noteEvent(l.episode)
		return
	}
	l.episode.Rejected[criticality.Levels-1-i]++
}

// noteQuiet notes the end of the rejections, as an event to tell, once
// none has come for breaker.OverloadQuiet, and less than a tick more,
// before tick t: the last rejection's tick is quietTicks behind.
// Callers hold l.mu.
func (l *Limiter) noteQuiet(t int64) {
	if l.rejecting && t-l.rejectedTick > quietTicks {
		l.rejecting = false
		l.episode.Rejecting = false
		l.noteEvent(l.episode)
	}
}

// noteEvent notes e, with the limiter's figures now, to tell the tied
// breaker's listeners once l.mu is released (see unlock). Callers hold
// l.mu.
func (l *Limiter) noteEvent(e breaker.OverloadEvent) {
	if l.nToTell == len(l.toTell) || l.tell.Load() == nil {
		return // a start and a stop at most between two unlocks
	}
	e.Stats = l.stats()
	l.toTell[l.nToTell] = e
	l.nToTell++
}

// unlock releases l.mu, then tells the tied breaker's listeners of the
// events noted meanwhile, outside the lock: a listener may read the
// limiter's figures.
func (l *Limiter) unlock() {
	l.setGate()
	if l.nToTell == 0 {
		l.mu.Unlock()
		return
	}
	l.unlockAndTell()
}

// unlockAndTell is unlock's path with events to tell.
func (l *Limiter) unlockAndTell() {
	events, n := l.toTell, l.nToTell
	l.nToTell = 0
	l.mu.Unlock()
	if tell := l.tell.Load(); tell != nil {
		for _, e := range events[:n] {
			(*tell)(e)
		}
	}
}

// handOff lets waiting calls in while the handlers have room. While
// overloaded, starting, before capacity is known, or once the queue has
// turned a call away (filled), the highest level goes first, and within
// a level the newest (but for the highest level in overload, in the order
// it came: see expire). Otherwise the oldest call goes first, whatever its
// level: the handlers will serve every call, and by level the lowest
// would wait longest, past its caller's deadline, for no level's gain. A
// queue that filled holds a second of expected wait, and its oldest calls
// would be served as their callers give up: 2 handlers × 200 ms at 1.2×
// and 1.5× their capacity, the overload not yet told at 10 calls a
// second, served 50–100 % and 39–99 % of it oldest first, 80–100 % and
// 90–99 % this way (the simulated server, eight seeds: see sim_test.go).
// Callers hold l.mu.
func (l *Limiter) handOff(now time.Time) {
	for l.queued > 0 && l.inFlight.Load() < int64(l.allowed()) {
		var w *waiter
		if l.overload || l.starting || l.capacity == 0 || l.filled {
			for i := criticality.Levels - 1; w == nil; i-- {
				q := &l.waiting[i]
				switch {
				case q.len == 0:
				case i == criticality.Levels-1 && l.overload && !l.starting:
					// No wait rejects the highest level in overload: in
					// order, its share of the queue bounds its wait; newest
					// first, a burst's first call would wait out the burst.
					w = q.popFront()
				default:
					w = q.popBack()
				}
			}
		} else {
			oldest := -1
			for i := range l.waiting {
				if h := l.waiting[i].head; h != nil && (oldest < 0 || h.since.Before(l.waiting[oldest].head.since)) {
					oldest = i
				}
			}
			w = l.waiting[oldest].popFront()
		}
		if !l.tryEnter(int64(l.allowedFor(w.level.Index()))) {
			// A lower level's call, and the headroom is the higher
			// levels': it waits. Taken from the back, it goes back there.
			l.waiting[w.level.Index()].pushBack(w)
			break
		}
		l.queued--
		w.state = granted
		w.done <- struct{}{}
	}
	l.noteLeast()
	if l.queued == 0 {
		l.emptySeen = true
		l.intervalEmptied = true
		l.idleSeen = l.idleSeen || l.inFlight.Load() < int64(l.allowed())
	} else if l.inFlight.Load() >= int64(l.allowed()) {
		l.full = true
	}
}

// noteLeast notes the calls queued now in the current tick's least.
// Callers hold l.mu.
func (l *Limiter) noteLeast() {
	if c := &l.ticks[l.tick%rateTicks]; c.n == l.tick && l.queued < c.least {
		c.least = l.queued
	}
}

// stallSpan is how long calls wait with none finishing before the limit
// doubles. Callers hold l.mu.
func (l *Limiter) stallSpan() time.Duration {
	return max(stallTime, 4*l.noLoad())
}

// watch sets the stall timer, unless set, while calls wait: it wakes the
// limiter a stallSpan after a call last finished, though no call
// arrives or finishes by then. Callers hold l.mu.
func (l *Limiter) watch(now time.Time) {
	if l.queued == 0 || l.watching {
		return
	}
	d := l.lastMove.Add(l.stallSpan()).Sub(now) + time.Millisecond
	if l.stall == nil {
		l.stall = l.clock.AfterFunc(d, l.wake)
	} else {
		l.stall.Reset(d)
	}
	l.watching = true
}

// wake is the stall timer's: it moves the limiter to the clock's time,
// which doubles the limit if the calls waiting have stalled, and sets
// the timer again while calls wait.
func (l *Limiter) wake() {
	l.mu.Lock()
	now := l.now()
	l.watching = false
	l.advance(now)
	l.watch(now)
	l.unlock()
}

// advance moves the limiter's clock to now: it adds the fast path's
// counts (see fold), and ends the ticks and the interval that have
// ended, moving the limit and the overload rule on them. Callers hold
// l.mu.
func (l *Limiter) advance(now time.Time) {
	l.fold()
	t := now.UnixNano() / int64(tickLength)
	if t > l.tick {
		l.endTick(t)
		l.noteQuiet(t)
	}
	if l.queued > 0 && now.Sub(l.lastMove) > l.stallSpan() {
		// Calls wait, and none in the handlers has finished for long: they
		// hold their room waiting on something else (a long poll, a
		// stream), which more calls let in cannot slow.
		l.limit = min(2*l.limit, maxLimit)
		l.lastMove = now
		l.handOff(now)
	}
	if l.overload && l.queued > 0 {
		l.expire(now)
	}
	if l.probing {
		// A probe lasts until half an interval's calls have finished in
		// it, or at least two once maxProbe (or two noLoads) has passed: one
		// call tells no spread.
		d := now.Sub(l.probeStart)
		if l.deep {
			// The first probe past the start lasts until its calls tell
			// noLoad, or minSamples of them do not: missed, the start's
			// noLoad, read with its calls queued inside, would stay.
			if l.probeCalls >= minSamples || d > maxDeepProbe ||
				l.probeCalls >= 2 && d > min(2*l.noLoad(), time.Second) && l.probeSpread() <= maxSpread {
				l.endProbe(now)
			}
		} else if l.probeCalls >= minSamples/2 || d > time.Second ||
			l.probeCalls >= 2 && d > min(max(maxProbe, 2*l.noLoad()), time.Second) {
			l.endProbe(now)
		}
		return
	}
	if l.interval.n >= minSamples && !now.Before(l.nextAdjust) &&
		(l.starting || l.interval.spread() <= maxSpread || now.Sub(l.nextAdjust) >= maxInterval-minInterval) ||
		l.upProbing && l.roomFound(now) {
		l.adjust(now)
	}
}

// endTick ends the current tick, the ticks since, and judges overload
// on the window's full ticks. Callers hold l.mu.
func (l *Limiter) endTick(t int64) {
	cur := &l.ticks[l.tick%rateTicks]
	if cur.n == l.tick && !l.probedTick && !l.starting && (!l.emptySeen && l.queued > 0 || l.overload && !l.idleSeen) {
		// The queue held calls throughout, or, overloaded, the handlers
		// never had room to spare (the short queue empties as it
		// rejects): they served all they could, cur.completions in a
		// tick.
		l.noteBusy(cur.completions)
	}
	if l.capacity > 0 { // the handlers served that many: they can
		l.capacity = max(l.capacity, l.served(l.tick))
		l.notePeak(t)
	}
	if cur.least == 0 {
		l.busySince = t
	}
	// The fast path samples one call in period of the next tick's, by
	// this tick's arrivals (see Limiter.gate); after ticks with none,
	// every call.
	l.period = 1
	if t == l.tick+1 && cur.n == l.tick {
		l.period = min(max(int64(cur.arrivals/samplesPerTick), 1), maxPeriod)
	}
	l.tick = t
	next := &l.ticks[t%rateTicks]
	*next = tickCounts{n: t, least: l.queued}
	l.emptySeen = l.queued == 0
	l.idleSeen = l.emptySeen && l.inFlight.Load() < int64(l.allowed())
	l.probedTick = l.probing
	if l.capacity == 0 {
		return
	}
	// The window's full ticks: those before t, since the first call.
	nLong, nShort := l.window(t-1, longTicks), l.window(t-1, shortTicks)
	long := l.perSecond(t-1, nLong, arrivals)
	short := l.perSecond(t-1, nShort, arrivals)
	lost := l.perSecond(t-1, nShort, losses)
	// Arrivals below capacity over the short window end an overload at
	// once (4× then 0.5×: the long window stays high for 1.7 s, while the
	// queue, kept short, rejects what a server with room would serve), and
	// keep the long window from starting another.
	c := l.capacity
	// The long window's rule waits for its whole window: in a server's
	// first seconds capacity is a reading or two, and 1.3× it is no
	// overload past doubt.
	longPast := nLong == longTicks && past(long, 1.3*l.peak(t-1), nLong) && past(short, 1.1*c, nShort)
	switch {
	case !l.overload && (longPast || past(short, 2*c, nShort) ||
		// A queue that grew full, or past its callers' deadlines: served
		// oldest first, each call waits out those before it, to be lost in
		// turn. Arrivals a little past capacity (the CPU's, under handlers
		// of many slots) grow such a queue on their own.
		past(short, c, nShort) && lost > lostShare*short):
		l.overload, l.rising, l.upGap = true, true, minUpGap
		l.trim()
	case l.overload && (past(-long, -c, nLong) || past(-short, -0.9*c, nShort)):
		l.overload = false
	}
	if l.overload {
		l.stretch = waitStretch(short, c)
	}
	switch {
	case !l.stands && !l.overload && l.standing(t, long, nLong, c):
		l.stands = true
		l.trim()
	case l.stands && cur.least == 0:
		l.stands = false // it emptied: arrivals fell below capacity
	}
}

// noteBusy counts the calls completed in the current tick, the handlers
// busy throughout, toward capacity: once the busy ticks since the last
// reading (over rateTicks at most) hold minSamples completions, their
// rate moves capacity a capacityWeight of the way per tick. Handlers that
// complete that many a tick move it on each, as a tick's count tells
// their rate to within a third; slower handlers' few a tick would move it
// by chance: 2 slots × 200 ms, the pair finishing together, complete 2 in
// one tick and none in the next, and capacity read a tick at a time ran
// 10–14 calls a second, 20 at first, for their 10 (bench/cmd/overload
// -configs 2x200ms). Callers hold l.mu.
func (l *Limiter) noteBusy(completed int) {
	if l.busyTicks > 0 && l.tick-l.busyFrom >= rateTicks {
		l.busyCalls, l.busyTicks = 0, 0 // too old to count with this tick
	}
	if l.busyTicks == 0 {
		l.busyFrom = l.tick
	}
	l.busyCalls += completed
	l.busyTicks++
	if l.busyCalls < minSamples {
		return
	}
	rate := float64(l.busyCalls) / (float64(l.busyTicks) * tickLength.Seconds())
	if l.capacity == 0 {
		l.capacity = rate
	} else {
		l.capacity += (1 - math.Pow(1-capacityWeight, float64(l.busyTicks))) * (rate - l.capacity)
	}
	l.busyCalls, l.busyTicks = 0, 0
}

// served is the calls a second the handlers completed over the ticks up
// to tick last, last included: the last shortTicks, or as many more as
// it takes to count twice minSamples of them (longTicks at most). What
// handlers served that fast they can serve; but half a second of those
// that serve 10 calls a second holds 5, and its highest, by chance, was
// 12–14 (see noteBusy). Callers hold l.mu.
func (l *Limiter) served(last int64) float64 {
	n := shortTicks
	for {
		rate := l.perSecond(last, n, completions)
		if n == longTicks || math.Round(rate*float64(n)*tickLength.Seconds()) >= 2*minSamples {
			return rate
		}
		n++
	}
}

// waitStretch is how many times overloadWait a call may wait in an
// overload of arrivals, a second over the short window, against
// capacity: capacity over the excess, between 1 and maxStretch. Over a
// wait of overloadWait noLoads the queue gains the excess of that span,
// and a slot that frees finds a call only while the queue holds one: at
// 2× capacity it gains 0.3 noLoads of capacity (1.2 calls for 4 slots ×
// 20 ms), at 4× three times that, at 1.5× half of it, and the queue
// often empties as a slot frees. Stretched, the wait gains as much at
// 1.5× as at 2×. 4 slots × 20 ms at 1.5× their capacity were busy
// 98.1–98.6 % of the time in place of 97.5–98.0 %, and served 95.2–95.8 %
// of capacity in place of 94.6–95.2 %, at a p99 10 ms higher
// (bench/cmd/overload, three seeds); at 2× and past, the same.
func waitStretch(arrivals, capacity float64) float64 {
	if excess := arrivals - capacity; excess > capacity/maxStretch {
		return max(1, capacity/excess)
	}
	return maxStretch
}

// standing reports whether the queue stands: over the last standTicks
// full ticks before t it was never empty, the fewest calls it held in
// the newer half were no fewer than in the older (it grows, or holds; a
// burst's queue drains), and more than the handlers serve in standWait
// noLoads, while long, the arrivals a second over the long window of
// nLong ticks, were at least c, capacity. Arrivals a few percent past
// capacity are within chance of it for seconds; the queue they grow,
// served oldest first, would wait out its callers' deadlines before it
// lost enough of them to start an overload.
//
// So much the queue also does while a heavy tail's few slow calls hold
// the slots for seconds, capacity falling with them, and then drains: it
// stands only while the handlers served, over the window, no less than
// slowedShare of the peak, what they have shown they serve (but for
// chance); and before standLongTicks only if long was past the peak, by
// more than chance, as well. 4 handlers with a heavy tail (the slowest
// call in a thousand 50 times the median) at 0.9× their capacity held
// 0.5–0.75 s of calls for 2 to 4 s, which this rule had trimmed to 5
// noLoads: 75 to 154 rejected in 10 s at three seeds of six, none now;
// arrivals 1.15× and 1.3× capacity stand at 1.9 s still
// (bench/cmd/overload -scenarios tails, steady). Callers hold l.mu.
func (l *Limiter) standing(t int64, long float64, nLong int, c float64) bool {
	if long < c {
		return false
	}
	peak := l.peak(t - 1)
	if past(-l.perSecond(t-1, longTicks, completions), -slowedShare*peak, longTicks) {
		return false // the handlers slowed: a heavy tail's spell
	}
	if t-l.busySince < standLongTicks && !past(long, peak, nLong) {
		return false
	}
	newer, older := math.MaxInt, math.MaxInt
	for i := int64(1); i <= standTicks; i++ {
		tc := &l.ticks[(t-i)%rateTicks]
		if tc.n != t-i || tc.least == 0 {
			return false
		}
		if i <= standTicks/2 {
			newer = min(newer, tc.least)
		} else {
			older = min(older, tc.least)
		}
	}
	return newer >= older && float64(newer) > c*standWait*l.noLoad().Seconds()
}

// past reports whether rate, arrivals a second over n ticks, is past
// level by more than chance, above it (or, with both negated, below):
// by twice the spread of a count of the calls level gives in n ticks,
// √ of them. A half second of handlers that serve 10 calls a second
// holds 5, and would otherwise start and end overloads on chance.
func past(rate, level float64, n int) bool {
	span := float64(n) * tickLength.Seconds()
	return above(rate*span, level*span)
}

// window is how many of the n ticks up to tick last, last included, the
// limiter has seen calls in: those since the first call's tick. A
// server's first second is judged on what it has seen, not on ticks
// before it counted as idle: at four times the capacity of 4 handlers ×
// 20 ms from their first call, a half second counted from before it
// held overload off until 0.4 s, past the 800 calls a second that had
// arrived in 0.2 s. Callers hold l.mu.
func (l *Limiter) window(last int64, n int) int {
	return int(max(0, min(int64(n), last-l.firstTick+1)))
}

// perSecond is the calls per second over the n ticks up to tick last,
// last included, of what: those that arrived, completed, or the queue lost.
// Callers hold l.mu.
func (l *Limiter) perSecond(last int64, n int, what counted) float64 {
	if n <= 0 {
		return 0 // no tick seen yet
	}
	sum := 0
	for t := last; t > last-int64(n) && t >= 0; t-- {
		c := &l.ticks[t%rateTicks]
		switch {
		case c.n != t: // stale: no call in that tick
		case what == completions:
			sum += c.completions
		case what == losses:
			sum += c.lost
		default:
			sum += c.arrivals
		}
	}
	return float64(sum) / (float64(n) * tickLength.Seconds())
}

// notePeak notes capacity among the peaks of the second of tick t.
// Callers hold l.mu.
func (l *Limiter) notePeak(t int64) {
	sec := t * int64(tickLength) / int64(time.Second)
	toSecond(l.peaks[:], &l.peakSec, sec)
	if p := &l.peaks[sec%peakSeconds]; l.capacity > *p {
		*p = l.capacity
	}
}

// toSecond moves ring, one entry a second indexed by the second modulo its
// length, from second *last to sec: the entries of the seconds in between,
// and of sec, start afresh (zero).
func toSecond[T any](ring []T, last *int64, sec int64) {
	if sec == *last {
		return
	}
	n := int64(len(ring))
	var zero T
	for s := *last + 1; s <= sec && s-*last <= n; s++ {
		ring[s%n] = zero
	}
	*last = sec
}

// peak is what the handlers have shown they serve: the highest capacity
// of the last peakSeconds seconds, or the calls they completed a second
// over the rateTicks up to tick last, if more. With a heavy tail, a few
// slow calls hold every slot for a second or two, and capacity, which
// follows the newest busy ticks, falls to a fraction of what the handlers
// serve in the long run (or is first measured then); arrivals past that
// for a second are no overload. Callers hold l.mu.
func (l *Limiter) peak(last int64) float64 {
	p := max(l.capacity, l.perSecond(last, longTicks, completions))
	for _, c := range l.peaks {
		p = max(p, c)
	}
	return p
}

// noLoad is the lowest latency of the intervals and probes of the last
// memory() seconds, 0 before the first. Callers hold l.mu.
func (l *Limiter) noLoad() time.Duration {
	d, _ := l.lowest()
	return d
}

// noLoadSpread is the spread noLoad was told to, when past maxSpread (a
// heavy tail's few calls); 0 otherwise. Callers hold l.mu.
func (l *Limiter) noLoadSpread() float64 {
	_, spread := l.lowest()
	return spread
}

// lowest is noLoad and the spread it was told to: the lowest latency
// of the seconds remembered; past the start, of handlers probed every
// second whose calls show no heavy tail, the second lowest once
// trimmedSeconds are known. The lowest of many readings is a fast moment
// of the machine's as much as the handlers' own: 32 handlers × 5 ms in
// process, on a 2-CPU machine shared with the load's driver, read noLoad
// at 4.80 ms where a probe's calls took 5.07–5.25 ms and an interval's,
// with no call waiting for a slot, 5.25–5.6 ms; the gradient took that
// gap for a queue inside and held the limit at 20–27 calls of the 32,
// and in overload the cap of what capacity serves at once held it too,
// the limit climbing back from a start read low over 8–10 s
// (bench/cmd/overload -configs 32x5ms -steady 4; docs/design/benchmarks.md).
// A second in which the limit is reached holds a probe, whose calls find
// no queue inside, and one in which it is not, calls that found none:
// the second lowest of three such seconds is such a reading too. Not so
// the seconds of slower handlers, probed every few seconds, between
// probes; a heavy tail's readings are the lowest of few calls by design
// (see Limiter.adjust), and the start's lowest is that of its fewest
// calls at once. Callers hold l.mu.
func (l *Limiter) lowest() (time.Duration, float64) {
	var m, m2 time.Duration
	var spread, spread2 float64
	known := 0
	for s := l.minimaSec; s > l.minimaSec-l.memory() && s >= 0; s-- {
		d := l.minima[s%maxNoLoadSeconds]
		if d <= 0 {
			continue
		}
		known++
		switch {
		case m == 0 || d < m:
			m, m2, spread2 = d, m, spread
			spread = l.minimaSpread[s%maxNoLoadSeconds]
		case m2 == 0 || d < m2:
			m2, spread2 = d, l.minimaSpread[s%maxNoLoadSeconds]
		}
	}
	if !l.starting && known >= trimmedSeconds && l.tail <= startTail && l.probeEvery == 1 {
		return m2, spread2
	}
	return m, spread
}

// memory is how many seconds noLoad remembers: noLoadProbes probes;
// during the start, maxNoLoadSeconds. The start ends on latency past
// noLoad, and a queue that grows inside the handlers over seconds would
// otherwise carry noLoad up with it: 2 slots × 200 ms at 1.2× their
// capacity kept starting for 11 s, the limit at 16 and its noLoad at 890
// ms, every call queued a second inside (bench/cmd/overload -configs
// 2x200ms, seed 2). Callers hold l.mu.
func (l *Limiter) memory() int64 {
	if l.starting {
		return maxNoLoadSeconds
	}
	return min(noLoadProbes*l.probeEvery, maxNoLoadSeconds)
}

// atOnce is how many calls the handlers serve at once, by Little's law:
// capacity calls a second, each in noLoad × tail (Little's law holds for
// the mean, and noLoad is a geometric mean); 0 before both are known.
// Callers hold l.mu.
func (l *Limiter) atOnce() float64 {
	return l.capacity * l.noLoad().Seconds() * l.tail
}

// adjust ends the interval: it notes its latency (the geometric mean of
// its calls'), and moves the limit on it when the limit was reached in
// it. Callers hold l.mu.
func (l *Limiter) adjust(now time.Time) {
	latency := l.interval.mean()
	l.latency = latency
	ratio := 0.0
	if l.interval.linear > 0 {
		// The mean over the geometric mean: 1 for a service that takes
		// the same time each call, 2.2 for a heavy tail's (lognormal,
		// the slowest call in a thousand 50 times the median).
		ratio = l.interval.linear / float64(l.interval.n) / float64(latency)
		l.tail += tailWeight * (max(ratio, 1) - l.tail)
	}
	if l.interval.n >= minSamples {
		sd := l.interval.spread() * math.Sqrt(float64(l.interval.n))
		l.perCall += tailWeight * (sd - l.perCall)
	}
	if l.upProbing && !l.endProbeUp(now) {
		// The calls past the handlers' slots queued inside: their latency
		// is the probe's, and the limit stays where it was.
		l.full = false
	}
	sec := now.Unix()
	if s := l.interval.spread(); s <= maxSpread || l.noLoad() == 0 {
		// An interval whose latency is still spread past maxSpread (a
		// heavy tail's, ended on maxInterval, or the start's few calls)
		// tells no noLoad, unless none is known: the lowest of a few such
		// is well below the handlers' own, and would hold the limit below
		// what they serve at once.
		l.noteNoLoad(now, latency, s)
	}
	// During the start, latency past noLoad ends it though the limit was
	// not reached: the calls it let in queue inside the handlers.
	if l.full || l.starting {
		// The latency is above noLoad only past what the spread of the
		// interval's own calls explains, and past the start that of
		// noLoad's reading (the start's own spread is a queue's: its first
		// calls queue one behind another in handlers that serve fewer).
		spread := l.interval.spread()
		if !l.starting {
			spread = math.Hypot(spread, l.noLoadSpread())
		}
		slack := math.Exp(tolerance * spread)
		gradient := min(1, float64(l.noLoad())*slack/float64(latency))
		next := l.limit*gradient + headroom*math.Sqrt(l.limit)
		// The start ends on a rise past a quarter, or past the
		// interval's own spread when that is more: not past both at once.
		// Calls that queue inside the handlers spread the interval, and
		// 4 calls at once on 2 handlers (1.5 noLoads on average, 1 or 2
		// each) doubled the limit again under the product of the two.
		started := l.starting && float64(latency) > float64(l.noLoad())*max(1/startEnd, slack)
		l.starting = l.starting && !started
		// The first interval, begun with the limiter before any call,
		// has no start to read a rate from.
		done, arrived := float64(l.intervalDone), float64(l.intervalArrived)
		grew := arrived > done+countNoise*math.Sqrt(done)
		if started && l.capacity == 0 && (!l.intervalEmptied || grew) && l.intervalDone > 0 && ratio <= startTail &&
			!l.intervalFrom.IsZero() && now.After(l.intervalFrom) {
			// The start ends on calls queued inside the handlers, the queue
			// never empty meanwhile, or grown past chance (calls arrived
			// faster than the handlers finished them, by more than twice
			// the √ of those they finished): every handler was busy, and
			// what they served is their capacity. Read from ticks, it would
			// wait for the probe that follows to end, and a full tick
			// after: 0.4 s from the first call for 4 handlers × 20 ms, 3 s
			// for 2 × 200 ms, while the queue grew at the rate of the
			// overload. A queue empty only as the interval began idled no
			// handler: 2 × 200 ms at twice their capacity, whose start let
			// in 8 calls at once as their queue emptied, read capacity
			// 4.5 s in without this, and 12 calls timed out in the queue
			// meanwhile (bench/cmd/overload -configs 2x200ms, seed 2). Not so a heavy tail's interval, whose few slow calls
			// held the handlers: what they served then is a fraction of
			// capacity; nor a few calls at once that queue inside 2
			// handlers by chance at half their capacity, whose queue
			// drains as fast as it grows.
			l.capacity = done / now.Sub(l.intervalFrom).Seconds()
		}
		// In overload the limit stops near what the handlers serve at
		// once, so latency far past noLoad is less a queue inside than
		// handlers that have slowed: a probe tells which now, not in up to
		// a second (or once slowedProbeGap has passed since the last), and
		// the limit holds meanwhile. Left to the gradient, it falls below
		// the handlers' slots on the old noLoad, and they idle until the
		// probe; which, in overload, lets in what they serve at once only
		// while the limit is above it.
		slowed := l.overload && !l.starting && gradient < slowedGradient
		probeSlowed := slowed && now.Sub(l.probeEnded) >= slowedProbeGap
		if l.starting && l.full {
			next = 2 * l.limit
		} else if l.starting {
			next = l.limit
		} else if slowed {
			next = l.limit
		} else if next < l.limit {
			next = l.limit + 0.5*(next-l.limit) // smoothed on the way down
		}
		// Read with capacity's peak of the last seconds: the capacity
		// of a heavy tail's handlers, read a tick at a time, runs a
		// third below its mean by chance, and a limit pulled under
		// their slots by such a reading had them serve less, which the
		// next reading took for capacity, down to a call at a time.
		if w := l.peak(l.tick-1) * l.noLoad().Seconds() * l.tail; l.overload && w > 0 {
			// More calls let in than the handlers serve at once wait
			// inside, and a probe's drained queue can tell the gradient
			// otherwise for an interval: in overload, that is where the
			// limit stops, plus the headroom. Below it, capacity counts
			// what the handlers served, so that it grows with them.
			//
			// A noLoad told only to past maxSpread (a heavy tail's, the
			// lowest of few calls) is well below the handlers' own, and
			// so is atOnce: it then stops the limit rising, and pulls it
			// down no further. Pulled down, the handlers served less with
			// their slots idle, capacity read from them fell, and atOnce
			// with it: 4 handlers of a heavy tail's 20 ms at 2× and 4×
			// their capacity served 40–98 % and 29–100 % of it (the
			// simulated server, eight seeds), with this and the peak
			// above 95–104 % and 98–108 %.
			most := w + headroom*math.Sqrt(w)
			if l.noLoadSpread() > 0 {
				most = max(most, l.limit)
			}
			next = min(next, most)
		}
		l.limit = min(max(next, 1), maxLimit)
		// Once every probeEvery seconds, an interval with √limit fewer
		// calls lets the handlers' own queue drain, for noLoad.
		if !l.starting && sec >= l.probeSec+l.probeEvery || started || probeSlowed {
			l.probing, l.deep, l.probeSec, l.probedTick = true, started, sec, true
			l.probeStart, l.probeCalls = now, 0
		}
		// In overload, a probe up lets in upGain times the limit, to learn
		// whether the handlers serve more (see endProbeUp), for maxUpSpan
		// or until they have, past chance (see advance): not for handlers
		// that complete fewer than upCalls in it, too few for their count
		// to tell a gain; and after an interval that followed no probe
		// (those let in fewer calls).
		if l.overload && (l.rising || !now.Before(l.upNext)) && l.full && !l.probing && !slowed &&
			l.intervalFrom.After(l.probeEnded) && now.After(l.intervalFrom) {
			rate := float64(l.intervalDone) / now.Sub(l.intervalFrom).Seconds()
			if rate*upGain*maxUpSpan.Seconds() >= upCalls {
				l.upProbing, l.upFrom, l.upLatency, l.upRate = true, l.limit, latency, rate
				l.limit = min(l.limit*upGain, maxLimit)
			}
		}
	}
	l.newInterval(now)
	if l.upProbing {
		l.nextAdjust = now.Add(maxUpSpan)
	}
	l.handOff(now)
}

// endProbeUp ends a probe up, and reports whether it found room: if the
// handlers completed more calls a second in it than the upRate of the
// interval before, past chance (see roomFound), the calls let in past the
// limit before found room, so those before them queued in none:
// upLatency, their latency at that load, is noLoad, and what the handlers
// served now is capacity, at least; rising, another probe up follows at
// once. Otherwise the handlers had no room (the calls past their slots
// queued inside, and they served what they did), or no call came to fill
// it: the limit goes back to upFrom, and the next probe up waits upGap,
// twice as long as the one after it will. Callers hold l.mu.
func (l *Limiter) endProbeUp(now time.Time) bool {
	l.upProbing = false
	if l.roomFound(now) {
		l.capacity = max(l.capacity, float64(l.intervalDone)/now.Sub(l.intervalFrom).Seconds())
		l.minima = [maxNoLoadSeconds]time.Duration{}
		l.noteNoLoad(now, l.upLatency, 0)
		l.upGap = minUpGap
		l.upNext = now.Add(l.upGap)
		return true
	}
	l.rising = false
	l.limit = l.upFrom
	l.upNext = now.Add(max(l.upGap, minUpGap))
	l.upGap = min(2*l.upGap, maxUpGap)
	return false
}

// roomFound reports whether a probe up has lasted minInterval and the
// handlers completed in it past chance more calls than at upRate (and
// probeNoise): the calls it let in found room. Callers hold l.mu.
func (l *Limiter) roomFound(now time.Time) bool {
	d := now.Sub(l.intervalFrom)
	return l.full && d >= minInterval && l.interval.n >= minSamples &&
		above(float64(l.intervalDone), l.upRate*(1+probeNoise)*d.Seconds())
}

// above reports whether a count of k calls is past the at expected by
// more than chance: countNoise times the √ of at.
func above(k, at float64) bool {
	return k > at+countNoise*math.Sqrt(math.Abs(at))
}

// newInterval starts the interval the limit is next adjusted from, at
// now. Callers hold l.mu.
func (l *Limiter) newInterval(now time.Time) {
	l.interval, l.full = logLatencies{}, false
	l.nextAdjust = now.Add(minInterval)
	if nl := l.noLoad(); l.starting && nl > 0 {
		l.nextAdjust = now.Add(min(minInterval, max(minStartInterval, startInterval*nl)))
	}
	l.intervalFrom, l.intervalDone, l.intervalArrived, l.intervalEmptied = now, 0, 0, l.queued == 0
}

// Stats returns the limiter's figures.
func (l *Limiter) Stats() breaker.OverloadStats {
	l.mu.Lock()
	l.advance(l.now())
	st := l.stats()
	l.unlock()
	return st
}

// stats returns the limiter's figures. Callers hold l.mu.
func (l *Limiter) stats() breaker.OverloadStats {
	st := breaker.OverloadStats{
		Limit:      l.limit,
		InFlight:   int(l.inFlight.Load()),
		Queued:     l.queued,
		Overloaded: l.overload,
		QueueHeld:  l.stands,
	}
	for i, n := range l.rejected {
		st.Rejected[criticality.Levels-1-i] = n
	}
	return st
}

// noteNoLoad notes latency, an interval's or a probe's told to within
// spread, among noLoad's minima. Callers hold l.mu.
func (l *Limiter) noteNoLoad(now time.Time, latency time.Duration, spread float64) {
	sec := now.Unix()
	last := l.minimaSec
	toSecond(l.minimaSpread[:], &last, sec)
	toSecond(l.minima[:], &l.minimaSec, sec)
	i := sec % maxNoLoadSeconds
	if m := &l.minima[i]; *m == 0 || latency < *m {
		*m = max(latency, 1)
		l.minimaSpread[i] = 0
		if spread > maxSpread {
			l.minimaSpread[i] = spread
		}
	}
}

// endProbe ends a probe: the latency of the calls let in during it,
// which found the handlers' own queue drained, is a noLoad once the
// probe's calls, with those of the probes before it (noLoadProbes of
// them at most), tell it to within maxSpread. Callers hold l.mu.
func (l *Limiter) endProbe(now time.Time) {
	l.probes++
	spread := l.probeSpread()
	if spread <= maxSpread {
		latency := l.probed.mean()
		at := l.allowed()
		drainedNone := float64(latency) >= (1-probeNoise)*float64(l.latency) && at <= l.probedAt
		// In overload a probe lets in what the handlers serve at once:
		// latency still far past noLoad, once their queue has drained, is
		// their service itself.
		old := l.noLoad()
		slower := l.overload && old > 0 && float64(latency)*slowedGradient >= float64(old) &&
			float64(at) <= math.Round(l.atOnce())
		if drainedNone || slower {
			// The probe drained no queue (its latency is the interval's
			// before, but for noise), with no more calls in than the last
			// probe, or the handlers are slower past doubt: they take
			// longer (their service slowed, or they lost room), and what
			// they took before is no longer theirs.
			l.minima = [maxNoLoadSeconds]time.Duration{}
		}
		l.noteNoLoad(now, latency, spread)
		if slower {
			// As many calls at once as before (Little's law), each taking
			// longer: they serve as many times fewer a second. Measured,
			// capacity would take seconds to fall, while it keeps the
			// limit, and a probe, above the handlers' slots.
			l.capacity *= float64(old) / float64(latency)
			l.busyCalls, l.busyTicks = 0, 0 // the busy ticks were at the old pace
		}
		if l.deep && l.latency > 0 {
			// The start ended on latency past the noLoad it read; with the
			// handlers' own, the limit moves at once to what the start's
			// last interval tells: halving toward it a tenth at a time
			// takes seconds of slow handlers' calls.
			g := min(1, float64(l.noLoad())/float64(l.latency))
			l.limit = max(1, min(l.limit, l.limit*g+headroom*math.Sqrt(l.limit)))
		}
		l.probeEvery = max(1, min(int64(probeSpacing*latency/time.Second), maxNoLoadSeconds/noLoadProbes))
		l.probedAt = at
		l.probed, l.probes = logLatencies{}, 0
	} else if l.probes >= noLoadProbes {
		l.probed, l.probes = logLatencies{}, 0 // too spread to tell
	}
	l.probing, l.deep = false, false
	l.probeEnded = now
	l.newInterval(now)
	l.handOff(now)
}

// probeSpread is the spread the probes' calls tell their latency to. A
// probe ends on its first calls to finish, the fastest of those it let
// in: their own spread understates a heavy tail's, which the intervals'
// calls tell.
//
// Unless they tell noLoad again: calls that agree with each other and
// with a noLoad told to within maxSpread, past the start, are handlers
// that take the same time each call, whose intervals' calls spread as
// they queue inside, past the limit, where a probe drains that queue (a
// heavy tail's fastest calls fall below its noLoad). Held to the
// intervals' spread, 4 handlers × 20 ms at capacity over loopback HTTP
// (their calls spread 0.2–0.3 by the queue inside) had probes of 4 to 8
// calls of 20.0–20.9 ms told as no noLoad; as the start's aged out,
// noLoad rose to the intervals' 25–34 ms, and with it the limit, to 7–9
// calls in 4 slots, each call let in queueing behind 3 to 5 others
// inside, where no level goes first. Callers hold l.mu.
func (l *Limiter) probeSpread() float64 {
	own := l.probed.spread()
	if l.probed.n == 0 {
		return own
	}
	spread := max(own, l.perCall/math.Sqrt(float64(l.probed.n)))
	if spread > maxSpread && own <= maxSpread && !l.deep {
		if nl, nlSpread := l.lowest(); nl > 0 && nlSpread == 0 &&
			math.Abs(math.Log(float64(l.probed.mean())/float64(nl))) <= probeNoise {
			return own
		}
	}
	return spread
}

// Force sets the limit and the overload state, and ends the start (the
// limit no longer doubles), for tests of the transports.
func (l *Limiter) Force(limit float64, overloaded bool) {
	l.mu.Lock()
	l.limit, l.overload, l.starting = limit, overloaded, false
	l.rising, l.upProbing = false, false
	l.unlock()
}

// logLatencies sums the logarithms of latencies, for their geometric mean
// and its spread: a heavy tail (a call 50 times the median) moves them
// by little, where it moves an arithmetic mean by much.
type logLatencies struct {
	n          int
	sum, sumSq float64
	linear     float64 // the latencies' sum, in nanoseconds, where kept
}

// add counts a latency, given as its logarithm.
func (s *logLatencies) add(x float64) {
	s.n++
	s.sum += x
	s.sumSq += x * x
}

// mean is the geometric mean of the latencies; s must hold one.
func (s *logLatencies) mean() time.Duration {
	return time.Duration(math.Exp(s.sum / float64(s.n)))
}

// spread is the standard error of the mean's logarithm: the factor's
// logarithm by which chance moves the mean, one standard deviation.
// It is infinite below two latencies.
func (s *logLatencies) spread() float64 {
	if s.n < 2 {
		return math.Inf(1)
	}
	n := float64(s.n)
	m := s.sum / n
	v := (s.sumSq - n*m*m) / (n - 1)
	return math.Sqrt(max(v, 0) / n)
}

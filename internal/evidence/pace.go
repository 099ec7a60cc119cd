package evidence

// The pace of the calls let through while the breaker sheds: at a
// probability near 1 on light traffic, the draws let a call through
// seldom and at uneven times (at 20 calls a second and a probability of
// 0.98, one every 2.5 s on average, and one gap in twenty longer than
// 7 s), and a healed dependency waits for the next of them. Paced, a call
// is let through at least every PaceBuckets, and the first call after
// healing is that much away at most (docs/design/algorithm.md, "Paced
// calls while shedding").

// paceParts: a call is admitted at least every 1/paceParts of the
// window (a bucket at least): 1 s at the default window, which at 20
// calls a second keeps the calls that reach a dependency down for 30 s
// within 7 % of them, the first second included.
const paceParts = 2

// PaceBuckets returns the most buckets a call can wait for the next
// admitted one while the breaker sheds: when the buckets finished since
// the last bucket that admitted a call are PaceBuckets−1, the next call
// that would be dropped is admitted ([Settings.ProbeDue]). It is 0 with
// RulePace off, without TrustRecent or without Evidence (the plain
// formula paces nothing).
func (s *Settings) PaceBuckets() int64 {
	if !s.TrustRecent || s.Evidence == 0 || !s.on(RulePace) {
		return 0
	}
	return max(1, int64(s.Buckets)/paceParts)
}

// paceCalls is how many calls, admitted or dropped, a pace's span must
// hold at the window's rate for the calls to be paced: a paced call is at
// most one in paceCalls of them (6 %), and at 2 calls a second, where a
// call a second would be half of them, the draws alone decide.
const paceCalls = 16

// paceSpan returns the calls of window, the finished buckets, scaled to
// PaceBuckets buckets: how many calls a pace's span holds at its rate.
func (s *Settings) paceSpan(window Bucket) float64 {
	if s.Buckets < 2 {
		return 0
	}
	return float64(window.Admitted()+window.Drops) * float64(s.PaceBuckets()) / float64(s.Buckets-1)
}

// pacing reports whether calls are paced on sum, the judgement of the
// finished buckets: the newest of them with outcomes held failures alone,
// a down run that spans a window, and the calls come at paceCalls or more
// a span. A dependency that serves some calls (an overload) is left to
// the draws: a paced call there would add attempts, not news.
func (s *Settings) pacing(sum *Summary) bool {
	return s.PaceBuckets() > 0 && sum.run.down > 0 && sum.run.downBuckets >= int64(s.Buckets) &&
		s.paceSpan(sum.Window) >= paceCalls
}

// ProbeDue reports whether the next call the breaker would drop is
// admitted, given since, the buckets finished in a row, the newest last,
// that admitted no call, and sum, the judgement of the finished buckets:
// while calls are paced (pacing), once since is PaceBuckets−1 or more,
// so that the bucket that begins is the PaceBuckets-th without one.
func (s *Settings) ProbeDue(since int64, sum *Summary) bool {
	return s.pacing(sum) && since >= s.PaceBuckets()-1
}

// Paced reports whether the calls are paced alone, none admitted on a
// draw: while calls are paced (pacing), at probability p the draws would
// let fewer than one of a span's calls through. The paced calls then
// stand in for the draws' few, evenly, rather than adding to them; where
// the draws let more through, the pace is a floor under them.
func (s *Settings) Paced(p float64, sum *Summary) bool {
	return p > 0 && s.pacing(sum) && (1-p)*s.paceSpan(sum.Window) < 1
}

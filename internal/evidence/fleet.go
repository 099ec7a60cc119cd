package evidence

// Counts is a summary and a live bucket as a fleet's processes share them
// and add up: the window's calls, the newest run of agreeing buckets, the
// calls read back for, and whether the process has been down a window, or
// is recovering from that (1 or 0; a sum counts processes).
type Counts struct {
	Successes, Failures, Drops                int64
	RecentSuccesses, RecentFailures           int64
	ReachSuccesses, ReachFailures, ReachDrops int64
	Down, Recovering                          int64
}

// Counts returns what sum and the live bucket hold, as a process shares
// them: the calls read back for are the window's own when it holds
// Evidence calls or more.
func (s *Settings) Counts(sum *Summary, live Bucket) Counts {
	window := sum.Window.Plus(live)
	c := Counts{Successes: window.Successes, Failures: window.Failures, Drops: window.Drops,
		ReachSuccesses: window.Successes, ReachFailures: window.Failures, ReachDrops: window.Drops}
	if s.TrustRecent {
		c.RecentSuccesses, c.RecentFailures = sum.run.recent(live)
	}
	if s.Evidence > 0 && window.Admitted() < s.Evidence {
		if reach := sum.Reach.Plus(live); reach.Admitted() > window.Admitted() {
			c.ReachSuccesses, c.ReachFailures, c.ReachDrops = reach.Successes, reach.Failures, max(window.Drops, reach.Drops)
		}
	}
	if sum.run.downBuckets >= int64(s.Buckets) {
		c.Down = 1
	}
	if sum.run.recovering {
		c.Recovering = 1
	}
	return c
}

// FleetRatio is [Settings.Ratio] over counts added up over a fleet: it
// recovers if one of its processes does, and it has been down a window if
// one of its processes has, or if its windows hold no success at all and
// at least Evidence calls, failed or dropped. (A process that calls a few
// times a second, and whose calls the fleet sheds, soon holds too few calls
// to follow its own runs of buckets; the fleet's window still says the
// dependency failed every call for a window.)
func (s *Settings) FleetRatio(c Counts) (num, den float64) {
	sum := Summary{
		Window: Bucket{c.Successes, c.Failures, c.Drops},
		Reach:  Bucket{c.ReachSuccesses, c.ReachFailures, c.ReachDrops},
		run:    run{recovering: c.Recovering > 0},
	}
	if c.Down > 0 || s.Evidence > 0 && c.Successes == 0 && c.RecentSuccesses == 0 && c.Failures+c.Drops >= s.Evidence {
		sum.run.downBuckets = int64(s.Buckets)
	}
	return s.ratio(&sum, Bucket{}, c.RecentSuccesses, c.RecentFailures)
}

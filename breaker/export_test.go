package breaker

// Totals returns the accepts and the total a breaker made by New holds in
// its window, for tests of what was recorded.
func Totals(b Breaker) (accepts, total int64) {
	g := b.(*googleBreaker)
	c := g.window.snapshot(g.now())
	return int64(c.successes), int64(c.successes + c.failures)
}

// DropRatio is the plain formula, equation 21-1 of the SRE book, for table
// tests: max(0, (total − protection − k·accepts) / (total + 1)).
func DropRatio(total, accepts int64, k, protection float64) float64 {
	return max(0, (float64(total)-protection-k*float64(accepts))/float64(total+1))
}

// Drops returns the drops a breaker made by New counts in its window.
func Drops(b Breaker) int64 {
	g := b.(*googleBreaker)
	return int64(g.window.snapshot(g.now()).drops)
}

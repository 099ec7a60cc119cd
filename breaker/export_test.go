package breaker

// Totals returns the accepts and the total a breaker made by New holds in
// its window, for tests of what was recorded.
func Totals(b Breaker) (accepts, total int64) {
	g := b.(*googleBreaker)
	succ, fail, _ := g.window.totals(g.now())
	return int64(succ), int64(succ + fail)
}

// DropRatio exposes the formula for table tests.
var DropRatio = dropRatio

// Drops returns the drops a breaker made by New counts in its window.
func Drops(b Breaker) int64 {
	g := b.(*googleBreaker)
	_, _, drops := g.window.totals(g.now())
	return int64(drops)
}

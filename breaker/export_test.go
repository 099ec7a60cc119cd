package breaker

// Totals returns the accepts and the total a breaker made by New holds in
// its window, for tests of what was recorded.
func Totals(b Breaker) (accepts, total int64) {
	return b.(*googleBreaker).window.Totals()
}

// DropRatio exposes the formula for table tests.
var DropRatio = dropRatio

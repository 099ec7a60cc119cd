package breaker

// isShedding reports whether b would drop calls now (its drop probability
// is above 0), for a registry choosing which breakers to forget. It reads
// the windows as a call does, without drawing, allocating or telling
// listeners. Breakers of other kinds (Nop) never shed.
func isShedding(b Breaker) bool {
	g, ok := b.(*googleBreaker)
	if !ok {
		return false
	}
	num, _ := g.formula.ratio(g.tally(g.now()))
	return num > 0
}

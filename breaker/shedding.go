package breaker

import "time"

// isShedding reports whether b would drop calls now (its drop probability
// is above 0, on its own counts or its fleet's), for a registry choosing
// which breakers to forget. It reads the windows as a call does, without
// drawing, allocating or telling listeners. Breakers of other kinds (Nop)
// never shed.
func isShedding(b Breaker) bool {
	g, ok := b.(*googleBreaker)
	if !ok {
		return false
	}
	_, num, _ := g.ratioAt(g.now())
	return num > 0
}

// ratioAt reads the windows at offset t and returns the tally and the
// formula's ratio, over the fleet's counts too while the breaker holds
// them: what a call at t decides on, before the draw.
func (b *googleBreaker) ratioAt(t time.Duration) (c tally, num, den float64) {
	c = b.tally(t)
	num, den = b.formula.ratio(&c)
	if o := b.fleet.others.Load(); o != nil {
		num, den = b.withFleet(o, t, c.failures, num, den)
	}
	return c, num, den
}

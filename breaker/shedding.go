package breaker

// isShedding reports whether b would drop calls now (its drop probability
// is above 0, on its own counts or its fleet's), for a registry choosing
// which breakers to forget. It reads the breaker as a call does, without
// drawing or allocating. A breaker holding an operator's override counts
// as shedding, so that the registry keeps it and its override. Breakers of
// other kinds (Nop) never shed.
func isShedding(b Breaker) bool {
	g, ok := b.(*googleBreaker)
	if !ok {
		return false
	}
	if g.holdsOverride() { // forgetting the breaker would forget its override
		return true
	}
	g.tick()
	j := g.judged.Load()
	live := g.counts.sum()
	if lv := g.levels.Load(); lv != nil {
		live = live.Plus(lv.others())
	}
	return g.probability(&j.sum, live) > 0
}

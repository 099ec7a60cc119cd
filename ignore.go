package srebreaker

// Ignorer is implemented by promises that can record a neutral outcome: the
// call was made but says nothing about the dependency's health, for example
// because the caller gave up on it. The promises of package breaker
// implement it; a [Promise] written against go-zero's interface need not.
type Ignorer interface {
	// Ignore reports that the call says nothing about the dependency's
	// health: it records neither a success nor a failure. Like Accept and
	// Reject, it is called at most once per promise, instead of them.
	Ignore()
}

// Ignore reports a neutral outcome on p: it calls p.Ignore when p implements
// [Ignorer], and does nothing otherwise, which for a breaker that counts
// admitted calls leaves the call out of its window. Call it instead of
// Accept or Reject, for example when the caller canceled the call. A nil p
// is a no-op.
func Ignore(p Promise) {
	if i, ok := p.(Ignorer); ok {
		i.Ignore()
	}
}

package proba_test

import (
	"fmt"

	"github.com/srebreaker/srebreaker/proba"
)

func ExampleProba_TrueOnProba() {
	p := proba.NewSeeded(1) // fixed sequence, for a reproducible example
	hits := 0
	for range 10_000 {
		if p.TrueOnProba(0.25) {
			hits++
		}
	}
	fmt.Println(hits > 2300 && hits < 2700, p.TrueOnProba(0), p.TrueOnProba(1))
	// Output: true false true
}

package breaker_test

import (
	"fmt"

	"github.com/srebreaker/srebreaker/breaker"
)

// An operator's endpoint finds a breaker by the name a request gives,
// without making one for a name the registry does not hold.
func ExampleRegistry_Lookup() {
	r := breaker.MustNewRegistry()
	r.Get("payments")

	for _, name := range []string{"payments", "paymnets"} {
		if b, ok := r.Lookup(name); ok {
			fmt.Println("found", b.Name())
		} else {
			fmt.Println("no breaker named", name)
		}
	}
	_, made := r.Lookup("paymnets")
	fmt.Println("made by the lookup:", made)
	// Output:
	// found payments
	// no breaker named paymnets
	// made by the lookup: false
}

//go:build !overloadlimit

package main

import "github.com/srebreaker/srebreaker/httpbreaker"

// haveLimit says whether httpbreaker's Handler has an overload limit in
// this tree. Build with -tags overloadlimit once it has (limit_on.go).
const haveLimit = false

// withoutLimit turns the Handler's overload limit off.
var withoutLimit []httpbreaker.HandlerOption // TODO(issue 41): httpbreaker.WithOverloadLimit(false), in limit_on.go, once the option exists.

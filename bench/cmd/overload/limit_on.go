//go:build overloadlimit

package main

import "github.com/srebreaker/srebreaker/httpbreaker"

// haveLimit says whether httpbreaker's Handler has an overload limit in
// this tree.
const haveLimit = true

// withoutLimit turns the Handler's overload limit off.
var withoutLimit = []httpbreaker.HandlerOption{httpbreaker.WithOverloadLimit(false)}

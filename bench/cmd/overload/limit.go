package main

import "github.com/srebreaker/srebreaker/httpbreaker"

// withoutLimit turns the Handler's overload limit off.
var withoutLimit = []httpbreaker.HandlerOption{httpbreaker.WithOverloadLimit(false)}

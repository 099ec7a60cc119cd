// Package srebreaker holds the vocabulary shared by the breaker packages:
// the [Promise] a breaker hands back for a call it admitted, the [Ignorer]
// a promise may also be, to report a call that counts neither way, and the
// [Acceptable] function that decides whether a call's error still counts as a
// success.
//
// The breaker itself lives in package
// [github.com/srebreaker/srebreaker/breaker]; its rolling window and its
// random source live in packages rollingwindow and proba; package
// httpbreaker wraps net/http clients and servers, and the nested module
// github.com/srebreaker/srebreaker/grpcbreaker gRPC ones. The names follow
// go-zero's core/breaker, so that code written against it moves over with a
// change of import path.
package srebreaker

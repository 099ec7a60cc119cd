// Package srebreaker holds the vocabulary shared by the breaker packages:
// the [Promise] a breaker hands back for a call it admitted, and the
// [Acceptable] function that decides whether a call's error still counts as a
// success.
//
// The breaker itself lives in package
// [github.com/srebreaker/srebreaker/breaker]; its rolling window and its
// random source live in packages rollingwindow and proba. The names follow
// go-zero's core/breaker, so that code written against it moves over with a
// change of import path.
package srebreaker

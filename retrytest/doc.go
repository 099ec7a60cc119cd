// Package retrytest measures, in its tests, what retries add to the calls
// that reach a dependency through the breakers of httpbreaker and
// grpcbreaker: package retry's Policy, and the retry layers users already
// have (github.com/hashicorp/go-retryablehttp,
// github.com/grpc-ecosystem/go-grpc-middleware/v2's retry interceptor,
// gRPC's own retryPolicy), each with the library's predicates and with
// their defaults. It is a module of its own so that those libraries stay
// out of the core's and grpcbreaker's requirements; it is not published.
// docs/guide/retries.md quotes the figures its tests log.
package retrytest

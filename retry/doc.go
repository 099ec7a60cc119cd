// Package retry retries calls through a breaker of package
// [github.com/srebreaker/srebreaker/breaker] without feeding an overload.
//
// A breaker that drops 97% of the calls to a dead dependency protects it
// only if nothing retries the drops: a request that may try four times
// reaches the dependency with probability 1 − p⁴, and a 3% leak becomes
// 12%. The Google SRE book's chapter on handling overload
// (https://sre.google/sre-book/handling-overload/) pairs client-side
// throttling with the rules this package keeps:
//
//   - at most [DefaultAttempts] (3) attempts per call, with exponential
//     backoff and full jitter between them;
//   - never a retry of the breaker's own drop (an error matching
//     [breaker.ErrServiceUnavailable]), nor of an error that says "don't
//     retry" ([Pushback]), nor of an attempt that could not finish before
//     the context's deadline;
//   - a retry budget per breaker ([Budget]): retries at most a tenth of the
//     calls in the breaker's own window, with a floor for light traffic,
//     kept on that window's buckets and read on its clock;
//   - the attempt number carried in the context ([WithAttempt],
//     [Attempt]), which httpbreaker and grpcbreaker send to the server.
//
// [Policy.Do] and [Call] are the helpers; a Policy is safe for concurrent
// use by multiple goroutines.
package retry

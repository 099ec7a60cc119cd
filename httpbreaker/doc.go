// Package httpbreaker puts a breaker of package
// [github.com/srebreaker/srebreaker/breaker] in front of net/http calls,
// one breaker per dependency, with the classification of outcomes most
// callers want and a way to override it.
//
// On the client side, a [Transport] wraps an [http.RoundTripper]: it takes
// a breaker per host (or per the key a [WithKey] function gives) from a
// [breaker.Registry], and sends a request only if that breaker admits it.
// Transport errors, 5xx and 429 responses count as failures, a request
// whose context the caller canceled counts as neither, and so does an
// answer of a Handler whose breaker sheds ([ShedByServer]: its breaker,
// nearer to the dependency, throttles it alone); everything else counts as
// a success ([ClientClassifier]). A dropped request never leaves the
// process: the caller gets an error matching [breaker.ErrServiceUnavailable]
// (through errors.Is, also inside the *url.Error of an [http.Client]), or
// what the [WithFallback] function returns.
//
// On the server side, a [Handler] wraps an [http.Handler] and sheds requests
// with 503 Service Unavailable and a Retry-After header when the handler's
// own failures, 5xx responses and panics ([ServerClassifier]), say that it
// is overloaded. Its one breaker is named [DefaultHandlerKey] unless
// WithKey says otherwise. Its sheds carry advice on retrying in the
// [RetryHeader]: [RetryNo] when most of what it sheds is already a retry,
// [RetryLater] otherwise.
//
// On both sides, a call whose caller gave up (the client canceled the
// request, or hung up before the handler finished) counts as neither a
// success nor a failure: it says nothing about the dependency's health.
//
// Both take their breakers from [breaker.DefaultRegistry] unless
// [WithRegistry] gives another, the registry grpcbreaker's interceptors
// use too.
// A registry keeps at most [breaker.DefaultLimit] breakers for names from
// outside, such as a Transport's hosts, unless [breaker.Registry.SetLimit]
// says otherwise, so that a Transport sent to any number of hosts holds a
// bounded number of breakers; a host given to [breaker.Registry.Configure]
// is kept whatever the limit. An exporter given that registry, such as
// prombreaker.MustNewCollector(breaker.DefaultRegistry()), reports every
// breaker they make, under its key.
//
// Calls carry their criticality (see [criticality.Level]) from a
// Transport to a Handler in the [CriticalityHeader]: both shed the lowest
// levels first, and a Handler hands the level on to the calls its handler
// makes. A Handler believes the header only when its [CriticalityPolicy]
// says so ([TrustHeader], for servers that only trusted services reach);
// by default it serves every request at the default level, whatever the
// client claims, and [LevelFunc] lets the server decide at the edge.
//
// Retries: a Transport sends the attempt number of a retry in the
// [AttemptHeader] ([AttemptOf] reads it on the server) and takes each retry
// from the breaker's retry budget (package
// [github.com/srebreaker/srebreaker/retry]); [ResponseError] carries a
// server's Retry-After and "don't retry" ([RetryHeader]) to package retry,
// and [CheckRetry] and [PrepareRetry] give go-retryablehttp the same rules
// (docs/guide/retries.md).
//
// Neither reads nor closes a response body to classify it.
//
// Transports and Handlers are safe for concurrent use by multiple
// goroutines.
package httpbreaker

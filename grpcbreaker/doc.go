// Package grpcbreaker puts a breaker of package
// [github.com/srebreaker/srebreaker/breaker] in front of gRPC calls, as
// client and server interceptors for google.golang.org/grpc. It is a
// module of its own, so that the core module does not depend on gRPC.
//
// The client interceptors ([NewClientInterceptors], then
// [ClientInterceptors.Unary] and [ClientInterceptors.Stream]) take a breaker
// per target and full method from
// a [breaker.Registry] and start a call only if that breaker admits it. A call that
// ends with one of the failure codes (by default [DefaultFailureCodes]:
// Unavailable, DeadlineExceeded, ResourceExhausted, Internal, DataLoss and
// Unknown) counts as a failure, unless a server interceptor whose breaker
// sheds answered it ([ShedByServer]: that breaker, nearer to the
// dependency, throttles it alone); a call the caller canceled counts as
// neither; every other ending is a success. A dropped call never leaves
// the process: it fails with status code Unavailable and a message that
// says the breaker shed it, and its error also matches
// [breaker.ErrServiceUnavailable] through errors.Is.
//
// The server interceptors ([NewServerInterceptors], then
// [ServerInterceptors.Unary] and [ServerInterceptors.Stream]) do the same
// on the server, per full method:
// they shed calls with Unavailable when the handlers' own failures say the
// server is overloaded, with advice on retrying in the
// grpc-retry-pushback-ms trailer that grpc-go's retries heed ([PushbackTrailer]:
// -1, don't retry, when most of what they shed is already a retry) and in
// an ErrorInfo detail of [ErrorDomain] ([RetryNo] or [RetryLater]).
//
// Calls carry their criticality (see [criticality.Level]) from the
// client interceptors to the server interceptors in the [CriticalityKey]
// metadata: both shed the lowest levels first, and the server interceptors
// hand the level on to the handler's context, and so to the calls it makes.
// The server interceptors believe the metadata only when their
// [CriticalityPolicy] says so ([TrustMetadata], for servers that only
// trusted services reach); by default they serve every call at the default
// level, whatever the client claims, and [LevelFunc] lets the server
// decide at the edge.
//
// Retries: the client interceptors send the attempt number of a retry in
// the [PreviousAttemptsKey] metadata, as gRPC's own retries do
// ([AttemptOf] reads it on the server), take each retry from the breaker's
// retry budget (package [github.com/srebreaker/srebreaker/retry]), and
// carry a server's [PushbackTrailer] trailer to package retry; [Retriable]
// gives go-grpc-middleware's retry interceptor the same rules
// (docs/guide/retries.md).
//
// [NewClientInterceptors] and [NewServerInterceptors] return an error
// wrapping [ErrInvalidOption], naming the option and its value, when an
// option is invalid; their Unary and Stream methods return the
// interceptors to give grpc.NewClient (grpc.WithChainUnaryInterceptor) and
// grpc.NewServer (grpc.ChainUnaryInterceptor). Every interceptor takes its
// breakers from [breaker.DefaultRegistry] unless [WithRegistry] gives
// another, the registry httpbreaker uses too. A registry keeps at most
// [breaker.DefaultLimit] breakers for names from outside, such as these
// targets and methods, unless [breaker.Registry.SetLimit] says otherwise,
// so that they cost bounded memory; a name given to
// [breaker.Registry.Configure] is kept whatever the limit. An
// exporter given that registry, such as
// prombreaker.MustNewCollector(breaker.DefaultRegistry()), reports every
// breaker they make, under the key [DefaultKey] gives:
// "127.0.0.1:50051/pkg.Service/Method" on a client, whichever of
// "127.0.0.1:50051", "dns:///127.0.0.1:50051" or
// "passthrough:///127.0.0.1:50051" the connection was made with, and
// "server:/pkg.Service/Method" on a server.
//
// Every interceptor is safe for concurrent use by multiple goroutines.
package grpcbreaker

// Package connectbreaker puts a breaker of package
// [github.com/srebreaker/srebreaker/breaker] in front of the calls of
// connectrpc.com/connect, as interceptors: a [ClientInterceptor] for
// clients and a [HandlerInterceptor] for handlers, each a
// connect.Interceptor, for unary calls and streams, over the Connect, gRPC
// and gRPC-Web protocols alike. It is a module of its own, so that the
// core module does not depend on connect.
//
// A Connect client over an http.Client could take httpbreaker's Transport,
// but that sees HTTP statuses, and a Connect call's status is not its
// outcome: a gRPC or gRPC-Web call's code travels in the trailers of a 200
// response, a Connect stream's in the end-of-stream message of a 200
// response. The interceptors judge each call by its code, as grpcbreaker's
// interceptors do ([DefaultFailureCodes] are failures, canceled is
// neither, every other code a success), and a stream by its final code,
// when it ends.
//
// The ClientInterceptor takes a breaker per host and procedure from a
// [breaker.Registry] ([WithKey] and [HostKey] for one per host) and starts
// a call only if it admits it; a dropped call fails with code unavailable,
// never sent, and its error matches [breaker.ErrServiceUnavailable]. It
// sends the call's [criticality.Level] in the [CriticalityHeader] and a
// retry's number in the [AttemptHeader], takes a retry from its breaker's
// retry budget (package [github.com/srebreaker/srebreaker/retry]), and
// hands package retry what the server said about retrying.
//
// The HandlerInterceptor sheds a handler's calls, lowest criticality first,
// with the policy every server of this module follows (grpcbreaker's
// server interceptors, httpbreaker's Handler): it believes a client's
// criticality only as its [CriticalityPolicy] says, answers a shed call
// with code unavailable and advice on retrying that this package's,
// grpcbreaker's and gRPC's own clients read ([RetryHeader], [ErrorDomain]),
// says "don't retry" once most of what it sheds is already a retry, and
// serves a probe now and then while its dependency looks down.
//
// The two sides take options of distinct types, [ClientOption] and
// [HandlerOption]: an [Option] is both, and [WithCriticalityPolicy] is a
// HandlerOption alone, so that giving it to a client does not compile.
// Each interceptor also refuses the other side's calls at run time
// ([ErrWrongSide]).
//
// Every interceptor takes its breakers from [breaker.DefaultRegistry]
// unless [WithRegistry] gives another, the registry httpbreaker and
// grpcbreaker use too, under the key [DefaultKey] gives:
// "127.0.0.1:8080/acme.foo.v1.FooService/Bar" on a client,
// "server:/acme.foo.v1.FooService/Bar" on a handler. A registry keeps at
// most [breaker.DefaultLimit] breakers for names from outside, such as
// these, unless [breaker.Registry.SetLimit] says otherwise, so that hosts
// and procedures cost bounded memory; a name given to
// [breaker.Registry.Configure] is kept whatever the limit.
//
// Every interceptor is safe for concurrent use by multiple goroutines.
package connectbreaker

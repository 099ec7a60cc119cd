// Package faulttest runs, in its tests, every integration of the
// repository against a real server on 127.0.0.1 behind a toxiproxy proxy
// started in the test process (github.com/Shopify/toxiproxy/v2's server
// package, configured through its Go API): httpbreaker's Transport and
// Handler, grpcbreaker's unary and stream interceptors, client and server,
// connectbreaker's client and handler interceptors (connect_test.go),
// goredisbreaker against redis-server and sqlbreaker against PostgreSQL
// (Debian's packages, which make test installs). It is a module of its own
// so that toxiproxy stays out of the core's and the published modules'
// requirements; it is not published.
//
// Each test makes a call every 5 ms of virtual time (200 calls/s): a few
// seconds of a healthy dependency, for the breaker to learn how long its
// calls take, then a fault, then the dependency healed. The faults are
// toxics on the answers' way back: a black hole (timeout 0), latency with
// jitter within the normal, reset_peer, the proxy disabled, a slicer, and
// a slowdown past breaker.WithSlowCall. The breakers read a mock clock
// (github.com/benbjohnson/clock) and a seeded random source; an admitted
// call's answer is held until the virtual time it takes has passed, and a
// call that gets no answer ends when its client gives up, a virtual 5 s
// after it was made. The tests wait for events (a call let through, its
// answer, its return), never for time to pass, so that the breakers see
// the same sequence on every run; the network is real and takes the time
// it takes. The figures each test logs are those of docs/design/behaviour.md:
// 90 % shed after (sustained), 95 % admitted after healing (sustained),
// the share of the fault's calls that reached the dependency, the calls in
// flight at the peak.
//
//	cd faulttest && go test -count=1 -v .
package faulttest

package srebreaker

// OverloadRejecter is implemented by promises that can record a failure of
// one kind apart: the dependency, a server with no room for the call,
// rejected it for overload and said so. The promises of package breaker
// implement it; a [Promise] written against go-zero's interface need not.
type OverloadRejecter interface {
	// RejectOverloaded records that the call failed because the dependency
	// rejected it for overload. It counts as Reject(reason) does, and
	// tells the breaker besides that the dependency serves what it can
	// whatever it is sent: while such a rejection is in its window, the
	// breaker counts every call it drops as a request, as the SRE book
	// does, so that a little under K calls reach the dependency per
	// success however many are offered. Like Accept and Reject, it is called at most once
	// per promise, instead of them.
	RejectOverloaded(reason string)
}

// RejectOverloaded reports on p a call that the dependency rejected for
// overload: it calls p.RejectOverloaded when p implements
// [OverloadRejecter], and p.Reject otherwise. httpbreaker's Transport,
// grpcbreaker's client interceptors and connectbreaker's client
// interceptor call it on the rejections of a server's overload limit. A
// nil p is a no-op.
func RejectOverloaded(p Promise, reason string) {
	switch r := p.(type) {
	case nil:
	case OverloadRejecter:
		r.RejectOverloaded(reason)
	default:
		p.Reject(reason)
	}
}

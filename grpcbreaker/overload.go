package grpcbreaker

import (
	"context"
	"sync"
	"sync/atomic"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// PushbackTrailer is the trailer in which a server interceptor whose
// breaker sheds tells gRPC's own retries (gRFC A6) when to retry a call it
// shed: a positive number of milliseconds (1000), or -1 when most of what
// it sheds is already a retry (the overload is wide, not local: a retry
// would only add to it), which grpc-go's retry policy reads as "don't
// retry". A failure of a call it served while it sheds carries -1 in that
// case too.
const PushbackTrailer = "grpc-retry-pushback-ms"

// ErrorDomain is the domain of the google.rpc.ErrorInfo detail that the
// status of a call answered by a shedding server interceptor carries:
// reason "SHED" for a call its breaker shed, "SHEDDING" for a failure of a
// call it served while it shed others, and metadata "retry" set to "no"
// or "later", its advice. [ShedByServer] and [RetryRefused] read it.
const ErrorDomain = "srebreaker"

// The reasons and advice of the ErrorInfo detail.
const (
	reasonShed     = "SHED"
	reasonShedding = "SHEDDING"
	retryNo        = "no"
	retryLater     = "later"
	pushbackLater  = "1000" // ms: DefaultRetryAfter in httpbreaker
	pushbackNo     = "-1"
)

// ShedByServer reports whether err is the status of a call answered by a
// server interceptor whose breaker is shedding: a call it shed
// (Unavailable), or a failure of a call it served while it shed others.
// Such an answer says that the server's breaker is already throttling what
// failed: a client breaker that counted it as a failure would throttle the
// same dependency a second time, and the two breakers would keep each
// other from seeing it heal. The client interceptors record it as neither
// a success nor a failure.
func ShedByServer(err error) bool {
	_, ok := serverAdvice(err)
	return ok
}

// RetryRefused reports whether err is the status of a call answered by a
// shedding server interceptor that advises against retrying it: most of
// what the server sheds is already a retry. Its trailers then hold
// [PushbackTrailer] -1 too.
func RetryRefused(err error) bool {
	a, ok := serverAdvice(err)
	return ok && a == retryNo
}

// serverAdvice returns the advice of the ErrorInfo detail that err's
// status carries, if it has one from ErrorDomain.
func serverAdvice(err error) (advice string, ok bool) {
	if err == nil {
		return "", false
	}
	st, isStatus := status.FromError(err)
	if !isStatus || st.Code() == codes.OK {
		return "", false
	}
	for _, d := range st.Proto().GetDetails() {
		if d.GetTypeUrl() != errorInfoURL {
			continue
		}
		var info errdetails.ErrorInfo
		if d.UnmarshalTo(&info) == nil && info.GetDomain() == ErrorDomain {
			return info.GetMetadata()["retry"], true
		}
	}
	return "", false
}

// errorInfoURL is the type URL of a google.rpc.ErrorInfo detail.
const errorInfoURL = "type.googleapis.com/google.rpc.ErrorInfo"

// marked returns st with the ErrorInfo detail of reason and advice.
func marked(st *status.Status, reason, advice string) *status.Status {
	if m, err := st.WithDetails(&errdetails.ErrorInfo{Reason: reason, Domain: ErrorDomain,
		Metadata: map[string]string{"retry": advice}}); err == nil {
		st = m
	}
	return st
}

// The statuses of a shed call, made once: a status is not changed once
// made, and gRPC copies what it sends.
var (
	shedLater = marked(status.New(codes.Unavailable, serverShedMsg), reasonShed, retryLater)
	shedNo    = marked(status.New(codes.Unavailable, serverShedMsg), reasonShed, retryNo)
)

// shedStatus returns the status of a shed call with advice.
func shedStatus(advice string) *status.Status {
	if advice == retryNo {
		return shedNo
	}
	return shedLater
}

// pushback returns the trailer that goes with advice: PushbackTrailer for
// a call the breaker shed, and for a failure only when the advice is "no";
// nil for no advice.
func pushback(advice string, shed bool) metadata.MD {
	switch {
	case advice == "":
		return nil
	case advice == retryNo:
		return metadata.Pairs(PushbackTrailer, pushbackNo)
	case shed:
		return metadata.Pairs(PushbackTrailer, pushbackLater)
	}
	return nil
}

// overload is what a server interceptor remembers of the calls it saw: a
// histogram of their attempt numbers (first attempts and retries), of
// those it saw and of those it shed, over the newest few hundred calls,
// for its advice on retrying; how many calls it has served since it last
// shed one, and how the calls it served ended, to probe a dependency that
// looks down. Its counts are approximate under concurrency, which its uses
// tolerate. Safe for concurrent use.
type overload struct {
	seen, shed [2]atomic.Int64 // [0] first attempts, [1] retries
	halving    atomic.Bool
	sinceShed  atomic.Int64 // 0 while not shedding; else 1 + the calls served since the last shed one
	shedRun    atomic.Int64 // calls the breaker dropped since it last admitted one
	downRun    atomic.Int64 // calls served that failed in a row, the newest last
	healed     atomic.Bool  // a probe succeeded after downFailures, and nothing failed since
	refusing   atomic.Bool  // the advice is "no" until the breaker stops shedding
}

const (
	// overloadMemory is how many calls the histogram holds at most: when
	// it holds more, every count is halved, so that it follows the newest
	// calls, about a window's worth at a few hundred calls a second.
	overloadMemory = 512
	// overloadMinSheds is how many sheds the histogram must hold before
	// the interceptor says "don't retry": one shed retry says little.
	overloadMinSheds = 8
	// sheddingSpan is how many calls in a row an interceptor serves after
	// it last shed one before it stops marking failures with its advice.
	sheddingSpan = 64
	// probeEvery is how many calls in a row the breaker must drop for the
	// next one it drops to be served all the same, as a probe.
	probeEvery = 32
	// downFailures is how many calls served in a row must have failed, and
	// none succeeded since, for the dependency to look down: only then
	// does the interceptor probe it. A dependency that serves some calls
	// (an overload, or shedding by criticality) is left to the breaker.
	downFailures = 3
)

// kind is the histogram's index of a call with the given attempt number.
func kind(attempt int) int {
	if attempt > 1 {
		return 1
	}
	return 0
}

// probe notes a call the breaker dropped and reports whether it is to be
// served all the same, as a probe: while the dependency looks down, the
// probeEvery-th in a row; after a probe succeeded, every one until a call
// fails.
func (o *overload) probe() bool {
	n := o.shedRun.Add(1)
	return o.healed.Load() || n%probeEvery == 0 && o.downRun.Load() >= downFailures
}

// outcome notes how a call the interceptor served ended, probe or not.
func (o *overload) outcome(x outcome, probe bool) {
	switch x {
	case succeeded:
		if probe && !o.healed.Load() && o.downRun.Load() >= downFailures {
			o.healed.Store(true)
		}
		if o.downRun.Load() != 0 {
			o.downRun.Store(0)
		}
	case ignored:
	default:
		o.downRun.Add(1)
		if o.healed.Load() {
			o.healed.Store(false)
		}
	}
}

// probe is the promise of a call served as a probe although the breaker
// dropped it: the breaker counted it as a drop, and its outcome is noted
// only in the interceptor's memory (see overload.outcome).
type probe struct{}

func (probe) Accept()       {}
func (probe) Reject(string) {}
func (probe) Ignore()       {}

// served notes a call the breaker admitted and returns the advice the
// interceptor gives with its failure, or "" when its breaker is not
// shedding.
func (o *overload) served(attempt int) string {
	o.note(kind(attempt))
	if o.shedRun.Load() != 0 {
		o.shedRun.Store(0)
	}
	if o.sinceShed.Load() == 0 {
		return "" // not shedding
	}
	if o.sinceShed.Add(1) <= sheddingSpan+1 {
		return o.advice()
	}
	o.sinceShed.Store(0) // sheddingSpan served in a row: the breaker has stopped shedding
	if o.refusing.Load() {
		o.refusing.Store(false)
	}
	return ""
}

// shedding notes a call the breaker shed and returns the advice the
// interceptor answers it with.
func (o *overload) shedding(attempt int) string {
	k := kind(attempt)
	o.shed[k].Add(1)
	o.note(k)
	if o.sinceShed.Load() != 1 {
		o.sinceShed.Store(1)
	}
	return o.advice()
}

// advice is "no" once most of the sheds the histogram holds, and at least
// overloadMinSheds of them, were retries, and then until the breaker stops
// shedding (sheddingSpan admitted in a row): callers that heed it stop
// retrying, so that the histogram soon holds first attempts only, while
// the overload that made them retry goes on. "later" otherwise.
func (o *overload) advice() string {
	if o.refusing.Load() {
		return retryNo
	}
	first, retries := o.shed[0].Load(), o.shed[1].Load()
	if first+retries >= overloadMinSheds && retries > first {
		o.refusing.Store(true)
		return retryNo
	}
	return retryLater
}

// note counts a call of kind k seen, and halves every count when the
// histogram holds more than overloadMemory calls.
func (o *overload) note(k int) {
	if o.seen[k].Add(1)+o.seen[1-k].Load() <= overloadMemory || !o.halving.CompareAndSwap(false, true) {
		return
	}
	for i := range 2 {
		o.seen[i].Add(-o.seen[i].Load() / 2)
		o.shed[i].Add(-o.shed[i].Load() / 2)
	}
	o.halving.Store(false)
}

// failureAnswer is err, the failure of a call served while the breaker
// sheds, with the advice in an ErrorInfo detail.
func failureAnswer(err error, advice string) error {
	return marked(status.Convert(err), reasonShedding, advice).Err()
}

// setTrailer sets md, if any, as a trailer of the unary call of ctx.
func setTrailer(ctx context.Context, md metadata.MD) {
	if md != nil {
		_ = grpc.SetTrailer(ctx, md)
	}
}

// memories holds an overload per breaker key, so that the keys of one
// Handler or interceptor (routes, methods) are judged apart: the first
// key's in a field of its own, the common case of one key; the others in a
// map, up to maxMemories of them, past which keys share one memory, so
// that keys clients choose cannot grow it without bound.
type memories struct {
	first  atomic.Pointer[keyed]
	others sync.Map // key → *overload
	n      atomic.Int64
	shared overload
}

// keyed is the overload of one key.
type keyed struct {
	key string
	o   overload
}

// maxMemories is how many keys get an overload of their own.
const maxMemories = 1024

// of returns the overload of key.
func (ms *memories) of(key string) *overload {
	f := ms.first.Load()
	if f == nil {
		if ms.first.CompareAndSwap(nil, &keyed{key: key}) {
			return &ms.first.Load().o
		}
		f = ms.first.Load()
	}
	if f.key == key {
		return &f.o
	}
	if v, ok := ms.others.Load(key); ok {
		return v.(*overload)
	}
	if ms.n.Load() >= maxMemories {
		return &ms.shared
	}
	v, loaded := ms.others.LoadOrStore(key, new(overload))
	if !loaded {
		ms.n.Add(1)
	}
	return v.(*overload)
}

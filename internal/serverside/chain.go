package serverside

import (
	"context"
	"errors"

	"github.com/srebreaker/srebreaker/internal/chain"
)

// Chained returns how a server's breaker records a call it served that
// its transport's classifier judged x, m the Mark of the call's context
// (see package chain): a Failure that follows a guarded call the handler
// made, which failed, was dropped, or was answered by a shedding server,
// is Ignore, since the breaker of that call, nearer the dependency,
// throttles it already; fromDependency then reports true, and the
// server's answer is to carry [DependencyAdvice]. Every other outcome, a
// failure with no failed call behind it included, stands. A panic is the
// server's own: a transport does not ask about one.
func Chained(x Outcome, m *chain.Mark) (_ Outcome, fromDependency bool) {
	if x != Failure {
		return x, false
	}
	if _, ok := m.Down(); !ok {
		return x, false
	}
	return Ignore, true
}

// Gone returns how a server's breaker records a call it served, judged
// x, whose context ctx was canceled before the handler returned: its
// client had gone, so that its answer reaches no one and says nothing of
// the server, whatever code the handler answered (a handler that turns
// the error of a call its context's cancel ended into a failure of its
// own, say). Ignore then; x otherwise. A deadline that passed is no
// cancel: the handler took too long.
func Gone(ctx context.Context, x Outcome) Outcome {
	if x == Failure && errors.Is(ctx.Err(), context.Canceled) {
		return Ignore
	}
	return x
}

// DependencyAdvice is the advice a server gives with a failure that
// follows from its dependency's (see [Chained]): advice, the server's own
// while its breaker sheds, or [RetryLater]. With it the failure reads, to
// every client breaker up the chain, as the answer of a shedding server,
// which they count as neither.
func DependencyAdvice(advice string) string {
	if advice == "" {
		return RetryLater
	}
	return advice
}

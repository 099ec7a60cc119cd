package grpcbreaker

import (
	"context"
	"strconv"

	"google.golang.org/grpc/metadata"

	"github.com/srebreaker/srebreaker/internal/serverside"
)

// PreviousAttemptsKey is the metadata key that carries how many attempts
// of a call came before this one, as gRPC's own retries send it (gRFC A6):
// absent or "0" on a first attempt, "1" on the first retry. The client
// interceptors add it when the call's context carries an attempt number
// above 1 (see [retry.WithAttempt], which [retry.Policy.Do] sets for each
// attempt); servers read it with [AttemptOf].
const PreviousAttemptsKey = "grpc-previous-rpc-attempts"

// AttemptOf returns the attempt number of the incoming call ctx belongs
// to, 1-based: one more than its [PreviousAttemptsKey] metadata (the
// highest, if it carries several), 1 when it has none or no value is a
// non-negative integer, at most 100. An attempt number is a client's claim
// about itself: a client that claims more is read as 100, so that what a
// server does with it stays bounded.
func AttemptOf(ctx context.Context) int {
	return serverside.AfterPrevious(metadata.ValueFromIncomingContext(ctx, PreviousAttemptsKey))
}

// withOutgoingAttempt returns ctx with the attempt number of the call (see
// outgoingAttempt) in the outgoing metadata, as previous attempts, when
// that number is above 1.
func withOutgoingAttempt(ctx context.Context) context.Context {
	if n, _ := outgoingAttempt(ctx); n > 1 {
		return metadata.AppendToOutgoingContext(ctx, PreviousAttemptsKey, strconv.Itoa(n-1))
	}
	return ctx
}

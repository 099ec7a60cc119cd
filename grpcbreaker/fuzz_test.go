package grpcbreaker

import (
	"context"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/criticality"
	"github.com/srebreaker/srebreaker/internal/serverside"
	"github.com/srebreaker/srebreaker/retry"
)

// The fuzz targets below read what the other side of a gRPC call sends: a
// client's attempt count and criticality metadata, a server's pushback
// trailer. Each checks the result's range, that a second read gives the
// same, that what this package writes reads back as itself, and that a
// long value allocates nothing. Their seed corpora are in testdata/fuzz;
// go test runs them, make fuzz explores from them.

// split returns the values of a metadata key, comma-separated in joined;
// nil for "".
func split(joined string) []string {
	if joined == "" {
		return nil
	}
	return strings.Split(joined, ",")
}

// incomingAs returns a server's context for the metadata a client sent in
// ctx.
func incomingAs(ctx context.Context) context.Context {
	md, _ := metadata.FromOutgoingContext(ctx)
	return metadata.NewIncomingContext(context.Background(), md)
}

func FuzzAttemptOf(f *testing.F) {
	f.Fuzz(func(t *testing.T, joined string) {
		vs := split(joined)
		ctx := metadata.NewIncomingContext(context.Background(), metadata.MD{PreviousAttemptsKey: vs})
		n := AttemptOf(ctx)
		require.True(t, n >= 1 && n <= serverside.MaxAttempt, "%q read as %d", vs, n)
		require.Equal(t, n, AttemptOf(ctx), "a second read")
		require.Equal(t, serverside.AfterPrevious(vs), n)

		// What a client interceptor sends for attempt n reads back as n.
		sent := withOutgoingAttempt(retry.WithAttempt(context.Background(), n))
		require.Equal(t, n, AttemptOf(incomingAs(sent)), "attempt %d sent", n)
		if len(joined) > 18 {
			require.LessOrEqual(t, testing.AllocsPerRun(1, func() { AttemptOf(ctx) }), 1.0, "long metadata allocates")
		}
	})
}

func FuzzOutgoingAttempt(f *testing.F) {
	f.Fuzz(func(t *testing.T, joined string) {
		vs := split(joined)
		ctx := metadata.NewOutgoingContext(context.Background(), metadata.MD{middlewareAttemptKey: vs})
		n, fromRetry := outgoingAttempt(ctx)
		require.False(t, fromRetry)
		again, _ := outgoingAttempt(ctx)
		require.Equal(t, n, again, "a second read")
		want := 0 // go-grpc-middleware's count of retries, plus one
		if len(vs) > 0 && serverside.IsDigits(vs[0]) {
			k, _ := new(big.Int).SetString(vs[0], 10)
			want = serverside.MaxAttempt
			if k.Cmp(big.NewInt(serverside.MaxAttempt)) < 0 {
				want = int(k.Int64()) + 1
			}
		}
		require.Equal(t, want, n, "%q", vs)
		// The attempt is passed on to the server, as previous attempts.
		require.Equal(t, max(n, 1), AttemptOf(incomingAs(withOutgoingAttempt(ctx))))
		if len(joined) > 18 { // as many allocations (copies of the metadata map) as for a short count
			short := metadata.NewOutgoingContext(context.Background(), metadata.MD{middlewareAttemptKey: {"1"}})
			require.LessOrEqual(t, testing.AllocsPerRun(1, func() { outgoingAttempt(ctx) }),
				testing.AllocsPerRun(1, func() { outgoingAttempt(short) }), "long metadata allocates")
		}
	})
}

// levels are the four levels, highest first.
var levels = []criticality.Level{criticality.CriticalPlus, criticality.Critical,
	criticality.SheddablePlus, criticality.Sheddable}

func FuzzCriticalityMetadata(f *testing.F) {
	b := breaker.MustNew(breaker.WithClock(clock.NewMock()))
	f.Fuzz(func(t *testing.T, joined string, maxIndex uint8) {
		vs := split(joined)
		ctx := metadata.NewIncomingContext(context.Background(), metadata.MD{CriticalityKey: vs})
		limit := levels[int(maxIndex)%len(levels)]
		policy := TrustMetadata(limit)
		c := policy.Level(ctx, "/s/M")
		require.True(t, c.Valid(), "%q read as %v", vs, c)
		require.LessOrEqual(t, c, limit, "%q read above the policy's max", vs)
		require.Equal(t, c, policy.Level(ctx, "/s/M"), "a second read")
		claimed := criticality.Default
		if len(vs) > 0 {
			claimed = serverside.Claimed(vs[0])
		}
		require.Equal(t, min(claimed, limit), c, "%q", vs)
		require.Equal(t, criticality.Default, IgnoreMetadata().Level(ctx, "/s/M"), "ignored")

		// The context a handler gets carries no claim the server did not
		// believe: metadata the call had says the level served at (left
		// as it is when it names that level alone), or is removed for the
		// default; the context carries the level.
		level, claim, p, err := serverAdmit(b, ctx, policy, "/s/M")
		require.NoError(t, err)
		require.Equal(t, c, level)
		p.Accept()
		served, _ := servedContext(ctx, claim, level)
		got := metadata.ValueFromIncomingContext(served, CriticalityKey)
		switch {
		case len(vs) == 0:
			require.Empty(t, got, "a claim appeared")
		case c == criticality.Default && !slices.Equal(vs, []string{c.String()}):
			require.Empty(t, got, "a claim the server did not believe is passed on")
		default:
			require.Equal(t, []string{c.String()}, got)
		}
		require.Equal(t, c, criticality.From(served))
		require.Equal(t, joined, strings.Join(metadata.ValueFromIncomingContext(ctx, CriticalityKey), ","), "the call's metadata is changed")

		// What a client interceptor sends for a level reads back as that
		// level.
		sent := withOutgoingCriticality(criticality.With(context.Background(), c))
		require.Equal(t, c, TrustMetadata(criticality.CriticalPlus).Level(incomingAs(sent), "/s/M"))
	})
}

func FuzzPushback(f *testing.F) {
	callErr := status.Error(codes.Unavailable, "shed")
	f.Fuzz(func(t *testing.T, joined string) {
		vs := split(joined)
		err := withPushback(callErr, metadata.MD{PushbackTrailer: vs})
		require.Equal(t, codes.Unavailable, status.Code(err), "the call's status is kept")
		require.ErrorIs(t, err, callErr)
		d, retries, ok := retry.PushbackOf(err)
		if len(vs) == 0 {
			require.False(t, ok, "a pushback without the trailer")
			return
		}
		require.True(t, ok)
		require.True(t, d >= 0 && d <= maxPushback, "%q read as %v", vs, d)
		again, againRetries, _ := retry.PushbackOf(withPushback(callErr, metadata.MD{PushbackTrailer: vs}))
		require.Equal(t, d, again, "a second read")
		require.Equal(t, retries, againRetries, "a second read")
		require.Equal(t, serverside.IsDigits(vs[0]), retries, "%q: only a number of milliseconds allows a retry", vs)
		if !retries {
			require.Zero(t, d)
			return
		}
		ms, _ := new(big.Int).SetString(vs[0], 10)
		want := maxPushback
		if ms.Cmp(big.NewInt(int64(maxPushback/time.Millisecond))) < 0 {
			want = time.Duration(ms.Int64()) * time.Millisecond
		}
		require.Equal(t, want, d, "%q", vs)

		// A wait written in milliseconds reads back as itself.
		back, _, _ := retry.PushbackOf(withPushback(callErr,
			metadata.MD{PushbackTrailer: {strconv.FormatInt(d.Milliseconds(), 10)}}))
		require.Equal(t, d, back)
		if len(vs[0]) > 18 {
			trailer := metadata.MD{PushbackTrailer: vs}
			require.LessOrEqual(t, testing.AllocsPerRun(1, func() { _ = withPushback(callErr, trailer) }), 1.0,
				"a long trailer allocates more than the error")
		}
	})
}

// TestWithPushback_whatTheServerSends: the trailers a shedding server
// interceptor sends read as its advice.
func TestWithPushback_whatTheServerSends(t *testing.T) {
	callErr := status.Error(codes.Unavailable, "shed")
	d, retries, _ := retry.PushbackOf(withPushback(callErr, metadata.MD{PushbackTrailer: {pushbackLater}}))
	assert.Equal(t, time.Second, d)
	assert.True(t, retries)
	_, retries, _ = retry.PushbackOf(withPushback(callErr, metadata.MD{PushbackTrailer: {pushbackNo}}))
	assert.False(t, retries)
}

// TestWithPushback_hugeTrailerAllocatesLittle: a pushback trailer of a
// million digits, and go-grpc-middleware's attempt count, allocated a copy
// of itself through strconv's error.
func TestWithPushback_hugeTrailerAllocatesLittle(t *testing.T) {
	callErr := status.Error(codes.Unavailable, "shed")
	huge := "1" + strings.Repeat("0", 1<<20)
	trailer := metadata.MD{PushbackTrailer: {huge}}
	d, retries, _ := retry.PushbackOf(withPushback(callErr, trailer))
	assert.Equal(t, maxPushback, d)
	assert.True(t, retries)
	assert.LessOrEqual(t, testing.AllocsPerRun(10, func() { _ = withPushback(callErr, trailer) }), 1.0)

	ctx := metadata.NewOutgoingContext(context.Background(), metadata.MD{middlewareAttemptKey: {huge}})
	n, _ := outgoingAttempt(ctx)
	assert.Equal(t, serverside.MaxAttempt, n)
	short := metadata.NewOutgoingContext(context.Background(), metadata.MD{middlewareAttemptKey: {"1"}})
	assert.Equal(t, testing.AllocsPerRun(10, func() { outgoingAttempt(short) }),
		testing.AllocsPerRun(10, func() { outgoingAttempt(ctx) }), "as many as for a short count")
}

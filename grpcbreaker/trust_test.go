package grpcbreaker_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/criticality"
	"github.com/srebreaker/srebreaker/grpcbreaker"
)

func TestCriticalityPolicy_Level(t *testing.T) {
	byMethod := grpcbreaker.LevelFunc(func(_ context.Context, fullMethod string) criticality.Level {
		if fullMethod == listMethod {
			return criticality.Sheddable
		}
		return criticality.CriticalPlus
	})
	for _, tc := range []struct {
		name   string
		policy grpcbreaker.CriticalityPolicy
		method string
		md     []string // values of CriticalityKey
		want   criticality.Level
	}{
		{"ignore: a claim", grpcbreaker.IgnoreMetadata(), callMethod, []string{"CRITICAL_PLUS"}, criticality.Critical},
		{"ignore: a low claim", grpcbreaker.IgnoreMetadata(), callMethod, []string{"SHEDDABLE"}, criticality.Critical},
		{"zero value ignores", grpcbreaker.CriticalityPolicy{}, callMethod, []string{"CRITICAL_PLUS"}, criticality.Critical},
		{"trust", grpcbreaker.TrustMetadata(criticality.CriticalPlus), callMethod, []string{"CRITICAL_PLUS"}, criticality.CriticalPlus},
		{"trust: any case", grpcbreaker.TrustMetadata(criticality.CriticalPlus), callMethod, []string{"sheddable_plus"}, criticality.SheddablePlus},
		{"trust: the first value", grpcbreaker.TrustMetadata(criticality.CriticalPlus), callMethod,
			[]string{"SHEDDABLE", "CRITICAL_PLUS"}, criticality.Sheddable},
		{"trust: none", grpcbreaker.TrustMetadata(criticality.CriticalPlus), callMethod, nil, criticality.Critical},
		{"trust: not a level", grpcbreaker.TrustMetadata(criticality.CriticalPlus), callMethod, []string{"URGENT"}, criticality.Critical},
		{"capped at CRITICAL", grpcbreaker.TrustMetadata(criticality.Critical), callMethod, []string{"CRITICAL_PLUS"}, criticality.Critical},
		{"below the cap", grpcbreaker.TrustMetadata(criticality.Critical), callMethod, []string{"SHEDDABLE"}, criticality.Sheddable},
		{"cap below the default", grpcbreaker.TrustMetadata(criticality.SheddablePlus), callMethod, nil, criticality.SheddablePlus},
		{"the server decides", byMethod, listMethod, []string{"CRITICAL_PLUS"}, criticality.Sheddable},
		{"the server decides: other method", byMethod, callMethod, []string{"SHEDDABLE"}, criticality.CriticalPlus},
		{"a func's value that is not a level",
			grpcbreaker.LevelFunc(func(context.Context, string) criticality.Level { return -7 }), callMethod, nil, criticality.Critical},
		{"an invalid cap, used directly", grpcbreaker.TrustMetadata(4), callMethod, []string{"SHEDDABLE"}, criticality.Critical},
		{"a nil func, used directly", grpcbreaker.LevelFunc(nil), callMethod, nil, criticality.Critical},
	} {
		t.Run(tc.name, func(t *testing.T) {
			md := metadata.MD{}
			for _, v := range tc.md {
				md.Append(grpcbreaker.CriticalityKey, v)
			}
			ctx := metadata.NewIncomingContext(context.Background(), md)
			assert.Equal(t, tc.want, tc.policy.Level(ctx, tc.method))
		})
	}
}

func TestWithCriticalityPolicy_invalid(t *testing.T) {
	for _, tc := range []struct {
		policy grpcbreaker.CriticalityPolicy
		want   string
	}{
		{grpcbreaker.TrustMetadata(5), "grpcbreaker: invalid option: WithCriticalityPolicy(TrustMetadata(criticality.Level(5))): " +
			"max must be one of the four levels, criticality.CriticalPlus to criticality.Sheddable"},
		{grpcbreaker.LevelFunc(nil), "grpcbreaker: invalid option: WithCriticalityPolicy(LevelFunc(nil)): function must not be nil"},
	} {
		si, err := grpcbreaker.NewServerInterceptors(grpcbreaker.WithCriticalityPolicy(tc.policy))
		assert.Nil(t, si)
		assert.ErrorIs(t, err, grpcbreaker.ErrInvalidOption)
		assert.EqualError(t, err, tc.want)
	}
	for _, p := range []grpcbreaker.CriticalityPolicy{grpcbreaker.IgnoreMetadata(), grpcbreaker.TrustMetadata(criticality.Sheddable),
		grpcbreaker.LevelFunc(func(context.Context, string) criticality.Level { return criticality.Critical })} {
		_, err := grpcbreaker.NewServerInterceptors(grpcbreaker.WithCriticalityPolicy(p))
		assert.NoError(t, err, "%v", p)
	}
	assert.Equal(t, "TrustMetadata(criticality.CriticalPlus)", grpcbreaker.TrustMetadata(criticality.CriticalPlus).String())
	assert.Equal(t, "IgnoreMetadata()", grpcbreaker.IgnoreMetadata().String())
}

// probe makes n unary calls one after the other to a server whose
// interceptors have opts, in front of a handler that fails 9 calls in 10;
// the odd calls carry CriticalityKey metadata set to claim (none if
// empty), the even ones none. It returns their status codes. Each probe has
// a server and a registry of its own, whose breakers read a mock clock and
// a source seeded alike, so that two probes whose calls the server treats
// alike answer alike.
func probe(t *testing.T, n int, claim string, opts ...grpcbreaker.ServerOption) []codes.Code {
	t.Helper()
	reg := newRegistry()
	var calls atomic.Int64
	failing := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if calls.Add(1)%10 != 0 {
			return nil, status.Error(codes.Internal, "overloaded")
		}
		return h(ctx, req)
	}
	_, addr := startServer(t, grpc.ChainUnaryInterceptor(
		grpcbreaker.UnaryServerInterceptor(append([]grpcbreaker.ServerOption{grpcbreaker.WithBreakers(reg.Get)}, opts...)...), failing))
	cc := dial(t, addr) // no interceptors: the client's breaker would drop calls itself
	out := make([]codes.Code, n)
	for i := range out {
		ctx := context.Background()
		if claim != "" && i%2 == 1 {
			ctx = metadata.AppendToOutgoingContext(ctx, grpcbreaker.CriticalityKey, claim)
		}
		_, err := call(ctx, cc, "hello")
		out[i] = status.Code(err)
	}
	return out
}

// served counts the calls that were not shed (Unavailable), of the even
// calls (plain) and of the odd ones (claiming).
func served(out []codes.Code) (plain, claiming int) {
	for i, c := range out {
		if c != codes.Unavailable {
			if i%2 == 0 {
				plain++
			} else {
				claiming++
			}
		}
	}
	return plain, claiming
}

// Any client could jump the queue: a server interceptor served a call at
// whatever level its metadata named (issue 22).
func TestServerInterceptor_untrustedClaimIsServedAsPlain(t *testing.T) {
	const n = 1000 // half plain, half claiming
	allPlain := probe(t, n, "")
	for _, tc := range []struct {
		name string
		opts []grpcbreaker.ServerOption
	}{
		{"default", nil},
		{"IgnoreMetadata", []grpcbreaker.ServerOption{grpcbreaker.WithCriticalityPolicy(grpcbreaker.IgnoreMetadata())}},
		{"capped at CRITICAL", []grpcbreaker.ServerOption{grpcbreaker.WithCriticalityPolicy(grpcbreaker.TrustMetadata(criticality.Critical))}},
	} {
		mixed := probe(t, n, "CRITICAL_PLUS", tc.opts...)
		plain, claiming := served(mixed)
		t.Logf("%s: %d plain calls served %d times, %d claiming CRITICAL_PLUS %d times", tc.name, n/2, plain, n/2, claiming)
		assert.Equal(t, allPlain, mixed, "%s: each call is answered as it is when none claims a level", tc.name)
		assert.InDelta(t, plain, claiming, 0.02*n/2+10, "%s: the same share served", tc.name)
	}
	plain, claiming := served(probe(t, n, "CRITICAL_PLUS",
		grpcbreaker.WithCriticalityPolicy(grpcbreaker.TrustMetadata(criticality.CriticalPlus))))
	t.Logf("trusted: %d plain calls served %d times, %d claiming CRITICAL_PLUS %d times", n/2, plain, n/2, claiming)
	assert.Greater(t, claiming, 3*plain+10, "a trusted CRITICAL_PLUS goes first")
}

func TestInterceptors_untrustedLevelIsNotCarried(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy grpcbreaker.CriticalityPolicy
		claim  criticality.Level
		want   criticality.Level
		md     []string
	}{
		{"default", grpcbreaker.CriticalityPolicy{}, criticality.CriticalPlus, criticality.Critical, nil},
		{"capped", grpcbreaker.TrustMetadata(criticality.Critical), criticality.CriticalPlus, criticality.Critical, nil},
		{"capped below the default", grpcbreaker.TrustMetadata(criticality.SheddablePlus), criticality.CriticalPlus,
			criticality.SheddablePlus, []string{"SHEDDABLE_PLUS"}},
		{"trusted", grpcbreaker.TrustMetadata(criticality.CriticalPlus), criticality.Sheddable, criticality.Sheddable, []string{"SHEDDABLE"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seen := &levelSeen{}
			opt := grpcbreaker.WithCriticalityPolicy(tc.policy)
			_, addr := startServer(t,
				grpc.ChainUnaryInterceptor(grpcbreaker.UnaryServerInterceptor(opt), seen.unary),
				grpc.ChainStreamInterceptor(grpcbreaker.StreamServerInterceptor(opt), seen.stream))
			reg := breaker.MustNewRegistry()
			cc := dial(t, addr,
				grpc.WithUnaryInterceptor(grpcbreaker.UnaryClientInterceptor(grpcbreaker.WithRegistry(reg))),
				grpc.WithStreamInterceptor(grpcbreaker.StreamClientInterceptor(grpcbreaker.WithRegistry(reg))))
			ctx := criticality.With(context.Background(), tc.claim)

			_, err := call(ctx, cc, "hello")
			require.NoError(t, err)
			level, md := seen.last()
			assert.Equal(t, tc.want, level, "unary")
			assert.Equal(t, tc.md, md, "unary: the metadata the handler sees")

			s, err := cc.NewStream(ctx, &listDesc, listMethod)
			require.NoError(t, err)
			require.NoError(t, s.SendMsg(wrapperspb.String("n:1")))
			require.NoError(t, s.CloseSend())
			for s.RecvMsg(new(wrapperspb.StringValue)) == nil {
			}
			level, md = seen.last()
			assert.Equal(t, tc.want, level, "stream")
			assert.Equal(t, tc.md, md, "stream: the metadata the handler sees")
		})
	}
}

func TestInterceptors_trustedHopCarriesTheLevel(t *testing.T) {
	for _, tc := range []struct {
		name    string
		front   grpcbreaker.CriticalityPolicy
		forward bool // the front forwards its incoming metadata, to a client without interceptors
		claim   criticality.Level
		want    criticality.Level
	}{
		{"trusted", grpcbreaker.TrustMetadata(criticality.CriticalPlus), false, criticality.CriticalPlus, criticality.CriticalPlus},
		{"trusted, low", grpcbreaker.TrustMetadata(criticality.CriticalPlus), false, criticality.Sheddable, criticality.Sheddable},
		{"capped", grpcbreaker.TrustMetadata(criticality.Critical), false, criticality.CriticalPlus, criticality.Critical},
		{"untrusted", grpcbreaker.IgnoreMetadata(), false, criticality.CriticalPlus, criticality.Critical},
		{"trusted, forwarded", grpcbreaker.TrustMetadata(criticality.CriticalPlus), true, criticality.CriticalPlus, criticality.CriticalPlus},
		{"capped, forwarded", grpcbreaker.TrustMetadata(criticality.Critical), true, criticality.CriticalPlus, criticality.Critical},
		{"untrusted, forwarded", grpcbreaker.IgnoreMetadata(), true, criticality.CriticalPlus, criticality.Critical},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// client → front (tc.front) → back (trusts the metadata): the
			// front's handler calls the back with its call's context.
			back, _, backAddr := serveLevelsAt(t, newRegistry())
			var next *grpc.ClientConn
			if tc.forward {
				next = dial(t, backAddr)
			} else {
				reg := breaker.MustNewRegistry()
				next = dial(t, backAddr, grpc.WithUnaryInterceptor(grpcbreaker.UnaryClientInterceptor(grpcbreaker.WithRegistry(reg))))
			}
			hop := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
				if tc.forward {
					vs := metadata.ValueFromIncomingContext(ctx, grpcbreaker.CriticalityKey)
					for _, v := range vs {
						ctx = metadata.AppendToOutgoingContext(ctx, grpcbreaker.CriticalityKey, v)
					}
				}
				if _, err := call(ctx, next, "hello"); err != nil {
					return nil, err
				}
				return h(ctx, req)
			}
			_, frontAddr := startServer(t, grpc.ChainUnaryInterceptor(
				grpcbreaker.UnaryServerInterceptor(grpcbreaker.WithRegistry(breaker.MustNewRegistry()),
					grpcbreaker.WithCriticalityPolicy(tc.front)), hop))
			reg := breaker.MustNewRegistry()
			cc := dial(t, frontAddr, grpc.WithUnaryInterceptor(grpcbreaker.UnaryClientInterceptor(grpcbreaker.WithRegistry(reg))))

			_, err := call(criticality.With(context.Background(), tc.claim), cc, "hello")
			require.NoError(t, err)
			level, _ := back.last()
			assert.Equal(t, tc.want, level, "the level the next hop serves at")
		})
	}
}

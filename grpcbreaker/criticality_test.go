package grpcbreaker_test

import (
	"context"
	"strings"
	"sync"
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

var levels = []criticality.Level{criticality.CriticalPlus, criticality.Critical, criticality.SheddablePlus, criticality.Sheddable}

// levelSeen notes the criticality the handlers found in their context, and
// the metadata they were sent, from interceptors chained after ours.
type levelSeen struct {
	mu    sync.Mutex
	level criticality.Level
	md    []string
}

func (s *levelSeen) note(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.level = criticality.From(ctx)
	s.md = metadata.ValueFromIncomingContext(ctx, grpcbreaker.CriticalityKey)
}

func (s *levelSeen) last() (criticality.Level, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.level, s.md
}

func (s *levelSeen) unary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	s.note(ctx)
	return h(ctx, req)
}

func (s *levelSeen) stream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	s.note(ss.Context())
	return h(srv, ss)
}

// trusted is the option of server interceptors that believe the metadata.
var trusted = grpcbreaker.WithCriticalityPolicy(grpcbreaker.TrustMetadata(criticality.CriticalPlus))

// serveLevels runs the test service behind the server interceptors, which
// trust the metadata, a levelSeen after them, and returns a client through the client
// interceptors.
func serveLevels(t *testing.T, reg *countingRegistry) (*levelSeen, *grpc.ClientConn) {
	seen, cc, _ := serveLevelsAt(t, reg)
	return seen, cc
}

// serveLevelsAt is serveLevels, also returning the server's address.
func serveLevelsAt(t *testing.T, reg *countingRegistry) (*levelSeen, *grpc.ClientConn, string) {
	t.Helper()
	seen := &levelSeen{}
	_, addr := startServer(t,
		grpc.ChainUnaryInterceptor(grpcbreaker.UnaryServerInterceptor(grpcbreaker.WithBreakers(reg.Get), trusted), seen.unary),
		grpc.ChainStreamInterceptor(grpcbreaker.StreamServerInterceptor(grpcbreaker.WithBreakers(reg.Get), trusted), seen.stream))
	clientReg := breaker.MustNewRegistry()
	cc := dial(t, addr,
		grpc.WithUnaryInterceptor(grpcbreaker.UnaryClientInterceptor(grpcbreaker.WithRegistry(clientReg))),
		grpc.WithStreamInterceptor(grpcbreaker.StreamClientInterceptor(grpcbreaker.WithRegistry(clientReg))))
	return seen, cc, addr
}

func TestInterceptors_carryTheCriticality(t *testing.T) {
	seen, cc := serveLevels(t, newRegistry())
	for _, c := range levels {
		ctx := criticality.With(context.Background(), c)
		_, err := call(ctx, cc, "hello")
		require.NoError(t, err)
		level, md := seen.last()
		assert.Equal(t, c, level, "unary: the handler's context carries the level on")
		if c == criticality.Default {
			assert.Empty(t, md, "the default level is not sent")
		} else {
			assert.Equal(t, []string{c.String()}, md)
		}

		s, err := cc.NewStream(ctx, &listDesc, listMethod)
		require.NoError(t, err)
		require.NoError(t, s.SendMsg(wrapperspb.String("n:1")))
		require.NoError(t, s.CloseSend())
		for s.RecvMsg(new(wrapperspb.StringValue)) == nil {
		}
		level, _ = seen.last()
		assert.Equal(t, c, level, "stream")
	}
	_, err := call(context.Background(), cc, "hello")
	require.NoError(t, err)
	level, md := seen.last()
	assert.Equal(t, criticality.Default, level, "no metadata: the default level")
	assert.Empty(t, md)
}

func TestServerInterceptor_badCriticalityIsTheDefault(t *testing.T) {
	seen, cc := serveLevels(t, newRegistry())
	for _, v := range []string{"bogus", "", "0", "CRITICAL PLUS", strings.Repeat("S", 2000), "sheddable"} {
		ctx := metadata.AppendToOutgoingContext(context.Background(), grpcbreaker.CriticalityKey, v)
		_, err := call(ctx, cc, "hello")
		require.NoError(t, err, "%q", v)
		level, _ := seen.last()
		want := criticality.Default
		if v == "sheddable" {
			want = criticality.Sheddable // any case
		}
		assert.Equal(t, want, level, "%q", v)
	}
	ctx := metadata.AppendToOutgoingContext(context.Background(),
		grpcbreaker.CriticalityKey, "SHEDDABLE_PLUS", grpcbreaker.CriticalityKey, "CRITICAL_PLUS")
	_, err := call(ctx, cc, "hello")
	require.NoError(t, err)
	level, _ := seen.last()
	assert.Equal(t, criticality.SheddablePlus, level, "the first value counts")
}

func TestServerInterceptor_shedsTheLowestLevelsFirst(t *testing.T) {
	// The plain formula, whose drop probability the test can work out.
	reg := newRegistry(breaker.WithPlainFormula())
	_, _, addr := serveLevelsAt(t, reg)
	// A client without interceptors, and the metadata set by hand: a
	// client's breaker would learn from the server's refusals and drop
	// calls itself.
	cc := dial(t, addr)
	// The server's breaker has seen 60 % of 400 calls fail, calls without a
	// level: it drops (400 − 5 − 1.5·160)/401 of them, which a SHEDDABLE
	// call, the lowest level, takes whole.
	b := reg.Registry.Get(grpcbreaker.DefaultKey(context.Background(), "", callMethod))
	for i := 0; i < 400; {
		if p, err := b.Allow(); err == nil {
			if i%5 < 2 {
				p.Accept()
			} else {
				p.Reject("overloaded")
			}
			i++
		}
	}
	s := b.Stats()
	require.InDelta(t, 155.0/401, s.DropProbability, 1e-9)

	shed := func(c criticality.Level) (n int) {
		ctx := metadata.AppendToOutgoingContext(context.Background(), grpcbreaker.CriticalityKey, c.String())
		for range 40 {
			_, err := call(ctx, cc, "hello")
			if status.Code(err) == codes.Unavailable {
				n++
			}
		}
		return n
	}
	assert.Equal(t, 40, shed(criticality.Sheddable), "SHEDDABLE is shed")
	assert.Equal(t, 0, shed(criticality.CriticalPlus), "CRITICAL_PLUS is served")
}

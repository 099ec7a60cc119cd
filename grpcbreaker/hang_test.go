package grpcbreaker_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/grpcbreaker"
)

// A stream that is meant to last (a watch, a chat) is not counted against
// the server as a call that does not come back once the server answered,
// while the breaker, which learned how long the method's calls take,
// counts a call still out after a few times that (issue 27).
func TestStreamClientInterceptor_longStreamIsNotOut(t *testing.T) {
	for _, tc := range []struct {
		name  string
		desc  *grpc.StreamDesc
		open  string // the first message of the long stream
		quick func(t *testing.T, cc *grpc.ClientConn)
	}{
		{"watch", &listDesc, "header,block", func(t *testing.T, cc *grpc.ClientConn) {
			s, err := cc.NewStream(context.Background(), &listDesc, listMethod)
			require.NoError(t, err)
			require.NoError(t, s.SendMsg(wrapperspb.String("n:1")))
			require.NoError(t, s.CloseSend())
			require.NoError(t, s.RecvMsg(new(wrapperspb.StringValue)))
			require.Equal(t, io.EOF, s.RecvMsg(new(wrapperspb.StringValue)))
		}},
		{"chat", &chatDesc, "hi", func(t *testing.T, cc *grpc.ClientConn) {
			s, err := cc.NewStream(context.Background(), &chatDesc, chatMethod)
			require.NoError(t, err)
			require.NoError(t, s.SendMsg(wrapperspb.String("hi")))
			require.NoError(t, s.RecvMsg(new(wrapperspb.StringValue)))
			require.NoError(t, s.CloseSend())
			require.Equal(t, io.EOF, s.RecvMsg(new(wrapperspb.StringValue)))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			es, addr := startServer(t)
			mock := clock.NewMock()
			mock.Set(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
			reg := newRegistry(breaker.WithClock(mock))
			cc := dial(t, addr, grpc.WithStreamInterceptor(grpcbreaker.StreamClientInterceptor(grpcbreaker.WithBreakers(reg.Get))))

			// The breaker learns that the method's calls come back within a bucket.
			for range 60 {
				tc.quick(t, cc)
				mock.Add(20 * time.Millisecond)
			}
			for len(reg.Reported()) > 0 {
				<-reg.Reported()
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			s, err := cc.NewStream(ctx, tc.desc, "/test.Echo/"+tc.desc.StreamName)
			require.NoError(t, err)
			require.NoError(t, s.SendMsg(wrapperspb.String(tc.open)))
			if tc.open == "hi" {
				require.NoError(t, s.RecvMsg(new(wrapperspb.StringValue)))
			} else {
				<-es.arrived
				reg.WaitReported(t) // when the header arrived
			}
			// The stream stays open for 5 s, 50 times the normal.
			for range 50 {
				mock.Add(100 * time.Millisecond)
				tc.quick(t, cc)
			}
			st := reg.Registry.Get(grpcbreaker.DefaultKey(context.Background(), addr,
				"/test.Echo/"+tc.desc.StreamName)).Stats()
			assert.Zero(t, st.TotalFailures, "failures: %v", st.Reasons)
			assert.Zero(t, st.TotalDrops)
		})
	}
}

// A handler's stream that is meant to last is not counted against the
// server once the handler answered (issue 27).
func TestStreamServerInterceptor_longStreamIsNotOut(t *testing.T) {
	mock := clock.NewMock()
	mock.Set(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	reg := newRegistry(breaker.WithClock(mock))
	es, addr := startServer(t, grpc.StreamInterceptor(grpcbreaker.StreamServerInterceptor(grpcbreaker.WithBreakers(reg.Get))))
	cc := dial(t, addr)
	quick := func() { require.NoError(t, list(context.Background(), cc, "n:1")) }

	// The breaker learns that the method's calls come back within a bucket.
	for range 60 {
		quick()
		mock.Add(20 * time.Millisecond)
	}
	for len(reg.Reported()) > 0 {
		<-reg.Reported()
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := cc.NewStream(ctx, &listDesc, listMethod)
	require.NoError(t, err)
	require.NoError(t, s.SendMsg(wrapperspb.String("header,block")))
	require.NoError(t, s.CloseSend())
	<-es.arrived
	reg.WaitReported(t) // the handler sent its header
	// The stream stays open for 5 s, 50 times the normal.
	for range 50 {
		mock.Add(100 * time.Millisecond)
		quick()
	}
	st := (reg.Registry.Get(serverKey(listMethod))).Stats()
	assert.Zero(t, st.TotalFailures, "failures: %v", st.Reasons)
	assert.Zero(t, st.TotalDrops)
}

package grpcbreaker_test

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/grpcbreaker"
	"github.com/srebreaker/srebreaker/internal/transporttest"
)

// recoverStream turns a handler's panic into Internal, so that a test
// server outlives it.
func recoverStream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = status.Error(codes.Internal, fmt.Sprint("panic: ", v))
		}
	}()
	return h(srv, ss)
}

// drain closes the client's side of s and reads it to its end, and
// returns the error that ended it: io.EOF for an OK status.
func drain(s grpc.ClientStream) error {
	_ = s.CloseSend()
	for {
		if err := s.RecvMsg(new(wrapperspb.StringValue)); err != nil {
			return err
		}
	}
}

// waitFor waits until ok holds, reading reg's reports, and fails the test
// rather than hang.
func waitFor(t *testing.T, reg *countingRegistry, ok func() bool, what string) {
	t.Helper()
	for !ok() {
		select {
		case <-reg.Reported():
		case <-time.After(10 * time.Second):
			t.Fatal("waiting for " + what)
		}
	}
}

// A stream that answered, stayed open for minutes, then ended, is
// recorded, once, as it ended: a failure code after messages is a
// failure, the caller's cancel neither, a deadline that the caller's
// stream passes a DeadlineExceeded failure on the client. While it was
// open, it did not count against the server as a call out, though the
// breaker had learned that the method's calls come back within a bucket.
// Both interceptors, a server stream and a bidirectional one.
func TestStreamInterceptors_endAfterAnswer(t *testing.T) {
	type ending struct {
		name   string
		value  string // what the handler does once it answered
		end    func(es *echoServer, cancel func(), dl *transporttest.ManualDeadline)
		code   codes.Code
		client [3]int64 // success, failure, neither on the client's breaker
		server [3]int64 // on the server's
	}
	release := func(es *echoServer, _ func(), _ *transporttest.ManualDeadline) { es.release <- struct{}{} }
	endings := []ending{
		{"ok", "hold", release, codes.OK, success, success},
		{"resource exhausted", fmt.Sprintf("hold,code:%d", codes.ResourceExhausted), release,
			codes.ResourceExhausted, failure, failure},
		{"not a failure code", fmt.Sprintf("hold,code:%d", codes.NotFound), release, codes.NotFound, success, success},
		{"the handler's deadline", fmt.Sprintf("hold,code:%d", codes.DeadlineExceeded), release,
			codes.DeadlineExceeded, failure, failure},
		{"panic", "hold,panic", release, codes.Internal, failure, failure},
		{"canceled by the caller", "hold", func(_ *echoServer, cancel func(), _ *transporttest.ManualDeadline) { cancel() },
			codes.Canceled, neither, neither},
		// The server sees its client cancel the stream.
		{"abandoned past its deadline", "hold", func(_ *echoServer, _ func(), dl *transporttest.ManualDeadline) { dl.Expire() },
			codes.DeadlineExceeded, failure, neither},
	}
	type shape struct {
		desc *grpc.StreamDesc
		// open sends the stream's request (then value, for the handler
		// once it answered) and reads the first message.
		open  func(t *testing.T, s grpc.ClientStream, value string)
		quick func(t *testing.T, cc *grpc.ClientConn)
	}
	shapes := []shape{
		{&listDesc, func(t *testing.T, s grpc.ClientStream, value string) {
			require.NoError(t, s.SendMsg(wrapperspb.String("n:1,"+value)))
			require.NoError(t, s.CloseSend())
			require.NoError(t, s.RecvMsg(new(wrapperspb.StringValue)))
		}, func(t *testing.T, cc *grpc.ClientConn) {
			require.NoError(t, list(context.Background(), cc, "n:1"))
		}},
		{&chatDesc, func(t *testing.T, s grpc.ClientStream, value string) {
			require.NoError(t, s.SendMsg(wrapperspb.String("hi")))
			require.NoError(t, s.RecvMsg(new(wrapperspb.StringValue)))
			require.NoError(t, s.SendMsg(wrapperspb.String(value)))
		}, func(t *testing.T, cc *grpc.ClientConn) {
			s, err := cc.NewStream(context.Background(), &chatDesc, chatMethod)
			require.NoError(t, err)
			require.NoError(t, s.SendMsg(wrapperspb.String("hi")))
			require.NoError(t, s.RecvMsg(new(wrapperspb.StringValue)))
			require.Equal(t, io.EOF, drain(s))
		}},
	}
	for _, side := range []string{"client", "server"} {
		for _, sh := range shapes {
			for _, e := range endings {
				t.Run(side+"/"+sh.desc.StreamName+"/"+e.name, func(t *testing.T) {
					mock := clock.NewMock()
					mock.Set(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
					reg := newRegistry(breaker.WithClock(mock))
					method := "/test.Echo/" + sh.desc.StreamName
					var es *echoServer
					var cc *grpc.ClientConn
					var key string
					want := e.client
					if side == "client" {
						var addr string
						es, addr = startServer(t, grpc.StreamInterceptor(recoverStream))
						cc = dial(t, addr, grpc.WithStreamInterceptor(
							grpcbreaker.StreamClientInterceptor(grpcbreaker.WithBreakers(reg.Get))))
						key = addr + method
					} else {
						var addr string
						es, addr = startServer(t, grpc.ChainStreamInterceptor(recoverStream,
							grpcbreaker.StreamServerInterceptor(grpcbreaker.WithBreakers(reg.Get))))
						cc = dial(t, addr)
						key, want = serverKey(method), e.server
					}
					quicks := int64(0)
					quick := func() {
						sh.quick(t, cc)
						quicks++
					}

					// The breaker learns that the method's calls come back within a bucket.
					for range 45 {
						quick()
						mock.Add(20 * time.Millisecond)
					}
					dl := newManualDeadline()
					ctx, cancel := context.WithCancel(dl)
					defer cancel()
					s, err := cc.NewStream(ctx, sh.desc, method)
					require.NoError(t, err)
					sh.open(t, s, e.value)
					<-es.arrived
					waitFor(t, reg, func() bool { return reg.Answered(key) == quicks+1 }, "the answer")

					// The stream stays open for 5 minutes.
					for range 30 {
						mock.Add(10 * time.Second)
						quick()
					}
					b := reg.Registry.Get(key)
					st := b.Stats()
					assert.Zero(t, st.TotalFailures, "failures while open: %v", st.Reasons)
					assert.Zero(t, st.TotalDrops)

					e.end(es, cancel, dl)
					err = drain(s)
					if e.code == codes.OK {
						assert.Equal(t, io.EOF, err)
					} else {
						assert.Equal(t, e.code, status.Code(err), "%v", err)
					}
					all := want
					all[0] += quicks
					waitFor(t, reg, func() bool { return reg.Outcomes(key) == all }, fmt.Sprint("outcomes ", all))
					quick()
					all[0]++
					waitFor(t, reg, func() bool { return reg.Outcomes(key) == all }, fmt.Sprint("outcomes ", all))
					assert.Equal(t, all, reg.Outcomes(key), "recorded once")
					st = b.Stats()
					assert.Equal(t, want[1], st.TotalFailures, "failures: %v", st.Reasons)
				})
			}
		}
	}
}

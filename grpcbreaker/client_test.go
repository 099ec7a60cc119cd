package grpcbreaker_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/grpcbreaker"
)

// client is a connection with the breaker's client interceptors to a
// fresh test server.
type client struct {
	server *echoServer
	cc     *grpc.ClientConn
	reg    *countingRegistry
	target string // the server's address, the start of every key
}

func newClient(t *testing.T, opts ...grpcbreaker.Option) *client {
	t.Helper()
	es, addr := startServer(t)
	reg := newRegistry()
	opts = append([]grpcbreaker.Option{grpcbreaker.WithBreakers(reg.Get)}, opts...)
	unary := grpcbreaker.UnaryClientInterceptor(opts...)
	stream := grpcbreaker.StreamClientInterceptor(opts...)
	cc := dial(t, addr, grpc.WithUnaryInterceptor(unary), grpc.WithStreamInterceptor(stream))
	return &client{server: es, cc: cc, reg: reg, target: addr}
}

func (c *client) outcomes(method string) [3]int64 { return c.reg.Outcomes(c.target + method) }

var (
	success = [3]int64{1, 0, 0}
	failure = [3]int64{0, 1, 0}
	neither = [3]int64{0, 0, 1}
)

func TestUnaryClientInterceptor_classifiesCodes(t *testing.T) {
	defaultFailures := map[codes.Code]bool{
		codes.Unavailable: true, codes.DeadlineExceeded: true, codes.ResourceExhausted: true,
		codes.Internal: true, codes.DataLoss: true, codes.Unknown: true,
	}
	for c := codes.OK; c <= codes.Unauthenticated; c++ {
		t.Run(c.String(), func(t *testing.T) {
			cl := newClient(t)
			_, err := call(context.Background(), cl.cc, fmt.Sprintf("code:%d", c))
			assert.Equal(t, c, status.Code(err))
			want := success
			switch {
			case defaultFailures[c]:
				want = failure
			case c == codes.Canceled: // by the server, not the caller: it says nothing
				want = neither
			}
			assert.Equal(t, want, cl.outcomes(callMethod), "[successes failures neither] for %v", c)
			assert.Equal(t, int64(1), cl.server.received.Load())
		})
	}
}

func TestUnaryClientInterceptor_callerCancelIsIgnored(t *testing.T) {
	cl := newClient(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { <-cl.server.arrived; cancel() }()
	_, err := call(ctx, cl.cc, "block")
	assert.Equal(t, codes.Canceled, status.Code(err))
	assert.Equal(t, neither, cl.outcomes(callMethod))
}

func TestUnaryClientInterceptor_deadlineIsFailure(t *testing.T) {
	cl := newClient(t)
	ctx := newManualDeadline()
	go func() { <-cl.server.arrived; ctx.Expire() }()
	_, err := call(ctx, cl.cc, "block")
	assert.Equal(t, codes.DeadlineExceeded, status.Code(err))
	assert.Equal(t, failure, cl.outcomes(callMethod))
}

func TestUnaryClientInterceptor_ctxAlreadyDone(t *testing.T) {
	cl := newClient(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := call(ctx, cl.cc, "hello")
	assert.Equal(t, codes.Canceled, status.Code(err))
	assert.Equal(t, [3]int64{}, cl.outcomes(callMethod), "nothing is recorded")
	assert.Equal(t, int64(0), cl.server.received.Load(), "nothing is sent")
}

// failUntilShedding makes 50 calls that fail with Unavailable and returns
// how many the breaker admitted.
func failUntilShedding(t *testing.T, cl *client) int64 {
	t.Helper()
	admitted := int64(0)
	for range 50 {
		_, err := call(context.Background(), cl.cc, fmt.Sprintf("code:%d", codes.Unavailable))
		if !errors.Is(err, breaker.ErrServiceUnavailable) {
			admitted++
		}
	}
	return admitted
}

func TestUnaryClientInterceptor_dropsNeverReachTheServer(t *testing.T) {
	cl := newClient(t)
	before := failUntilShedding(t, cl)
	require.Equal(t, before, cl.server.received.Load())

	sent, dropped := int64(0), 0
	for range 200 {
		_, err := call(context.Background(), cl.cc, fmt.Sprintf("code:%d", codes.Unavailable))
		require.Error(t, err)
		assert.Equal(t, codes.Unavailable, status.Code(err), "a drop is Unavailable too")
		if !errors.Is(err, breaker.ErrServiceUnavailable) {
			assert.Equal(t, "told to fail with Unavailable", status.Convert(err).Message())
			sent++
			continue
		}
		dropped++
		msg := status.Convert(err).Message()
		assert.Contains(t, msg, "grpcbreaker: call shed by the client's breaker: breaker: service unavailable")
		assert.Contains(t, msg, `breaker "`+cl.target+callMethod+`"`, "the message names the breaker")
	}
	assert.Greater(t, dropped, 150, "a failing server is shed")
	assert.Equal(t, before+sent, cl.server.received.Load(), "dropped calls never reach the server")
	assert.Equal(t, [3]int64{0, before + sent, 0}, cl.outcomes(callMethod), "drops are not recorded")
}

func TestUnaryClientInterceptor_breakerPerMethod(t *testing.T) {
	cl := newClient(t)
	failUntilShedding(t, cl)
	// Another method on the same server has a breaker of its own.
	s, err := cl.cc.NewStream(context.Background(), &collectDesc, collectMethod)
	require.NoError(t, err)
	require.NoError(t, s.SendMsg(wrapperspb.String("a")))
	require.NoError(t, s.CloseSend())
	out := new(wrapperspb.StringValue)
	require.NoError(t, s.RecvMsg(out))
	assert.Equal(t, "a", out.GetValue())
	assert.Equal(t, success, cl.outcomes(collectMethod))
}

func TestUnaryClientInterceptor_withFailureCodes(t *testing.T) {
	cl := newClient(t, grpcbreaker.WithFailureCodes(codes.NotFound, codes.Canceled))
	_, err := call(context.Background(), cl.cc, fmt.Sprintf("code:%d", codes.NotFound))
	assert.Equal(t, codes.NotFound, status.Code(err))
	_, err = call(context.Background(), cl.cc, fmt.Sprintf("code:%d", codes.Unavailable))
	assert.Equal(t, codes.Unavailable, status.Code(err))
	_, err = call(context.Background(), cl.cc, fmt.Sprintf("code:%d", codes.Canceled))
	assert.Equal(t, codes.Canceled, status.Code(err))
	assert.Equal(t, [3]int64{1, 2, 0}, cl.outcomes(callMethod),
		"NotFound and the server's Canceled are failures, Unavailable a success")

	// The caller's own cancellation is neither, whatever the set.
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-cl.server.arrived; cancel() }()
	_, err = call(ctx, cl.cc, "block")
	assert.Equal(t, codes.Canceled, status.Code(err))
	assert.Equal(t, [3]int64{1, 2, 1}, cl.outcomes(callMethod))
}

func TestUnaryClientInterceptor_withKey(t *testing.T) {
	cl := newClient(t, grpcbreaker.WithKey(func(_ context.Context, target, _ string) string { return target }))
	_, err := call(context.Background(), cl.cc, "a")
	require.NoError(t, err)
	s, err := cl.cc.NewStream(context.Background(), &listDesc, listMethod)
	require.NoError(t, err)
	require.NoError(t, s.SendMsg(wrapperspb.String("n:1")))
	require.NoError(t, s.CloseSend())
	for s.RecvMsg(new(wrapperspb.StringValue)) == nil {
	}
	assert.Equal(t, [3]int64{2, 0, 0}, cl.reg.Outcomes(cl.target), "one breaker for the whole server")
}

// panicky is a unary interceptor, after the breaker's, that panics.
func panicky(context.Context, string, any, any, *grpc.ClientConn, grpc.UnaryInvoker, ...grpc.CallOption) error {
	panic("interceptor bug")
}

func TestUnaryClientInterceptor_panicIsFailureAndRaised(t *testing.T) {
	_, addr := startServer(t)
	reg := newRegistry()
	unary := grpcbreaker.UnaryClientInterceptor(grpcbreaker.WithBreakers(reg.Get))
	cc := dial(t, addr, grpc.WithChainUnaryInterceptor(unary, panicky))
	assert.PanicsWithValue(t, "interceptor bug", func() { _, _ = call(context.Background(), cc, "a") })
	assert.Equal(t, failure, reg.Outcomes(addr+callMethod))
}

func TestStreamClientInterceptor_serverStream(t *testing.T) {
	for _, tc := range []struct {
		name  string
		value string
		want  [3]int64
		code  codes.Code
	}{
		{"ok", "n:3", success, codes.OK},
		// The server answered, then failed: a failure.
		{"fails after messages", fmt.Sprintf("n:2,code:%d", codes.Unavailable), failure, codes.Unavailable},
		{"fails at once", fmt.Sprintf("code:%d", codes.Internal), failure, codes.Internal},
		{"not a failure code", fmt.Sprintf("n:1,code:%d", codes.NotFound), success, codes.NotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := newClient(t)
			s, err := cl.cc.NewStream(context.Background(), &listDesc, listMethod)
			require.NoError(t, err)
			require.NoError(t, s.SendMsg(wrapperspb.String(tc.value)))
			require.NoError(t, s.CloseSend())
			_, n := parse(tc.value)
			for i := range n {
				out := new(wrapperspb.StringValue)
				require.NoError(t, s.RecvMsg(out))
				assert.Equal(t, fmt.Sprint(i), out.GetValue())
				assert.Equal(t, [3]int64{}, cl.outcomes(listMethod), "answered, not recorded before the end")
				assert.Equal(t, int64(1), cl.reg.Answered(cl.target+listMethod), "answered once")
			}
			err = s.RecvMsg(new(wrapperspb.StringValue))
			if tc.code == codes.OK {
				assert.Equal(t, io.EOF, err)
			} else {
				assert.Equal(t, tc.code, status.Code(err))
			}
			assert.Equal(t, tc.want, cl.outcomes(listMethod))

			// Reading past the end records nothing more.
			_ = s.RecvMsg(new(wrapperspb.StringValue))
			assert.Equal(t, tc.want, cl.outcomes(listMethod), "recorded exactly once")
		})
	}
}

// A server stream is answered when the server's header arrives, before
// any message: a watch that sends its header at once and then waits for
// events is not a call that does not come back. Its caller's cancel is
// recorded as neither.
func TestStreamClientInterceptor_serverStreamHeader(t *testing.T) {
	cl := newClient(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := cl.cc.NewStream(ctx, &listDesc, listMethod)
	require.NoError(t, err)
	require.NoError(t, s.SendMsg(wrapperspb.String("header,block")))
	require.NoError(t, s.CloseSend())
	<-cl.server.arrived
	cl.reg.WaitReported(t)
	assert.Equal(t, int64(1), cl.reg.Answered(cl.target+listMethod), "the header is the server's answer")
	assert.Equal(t, [3]int64{}, cl.outcomes(listMethod), "not recorded before the end")
	cancel()
	assert.Equal(t, codes.Canceled, status.Code(s.RecvMsg(new(wrapperspb.StringValue))))
	assert.Equal(t, neither, cl.outcomes(listMethod), "recorded exactly once")
}

func TestStreamClientInterceptor_clientStream(t *testing.T) {
	cl := newClient(t)
	s, err := cl.cc.NewStream(context.Background(), &collectDesc, collectMethod)
	require.NoError(t, err)
	for _, v := range []string{"a", "b", "c"} {
		require.NoError(t, s.SendMsg(wrapperspb.String(v)))
	}
	require.NoError(t, s.CloseSend())
	out := new(wrapperspb.StringValue)
	require.NoError(t, s.RecvMsg(out))
	assert.Equal(t, "a+b+c", out.GetValue())
	assert.Equal(t, success, cl.outcomes(collectMethod), "the one response ends a client stream")
}

func TestStreamClientInterceptor_bidiFailure(t *testing.T) {
	cl := newClient(t)
	s, err := cl.cc.NewStream(context.Background(), &chatDesc, chatMethod)
	require.NoError(t, err)
	require.NoError(t, s.SendMsg(wrapperspb.String(fmt.Sprintf("code:%d", codes.ResourceExhausted))))
	err = s.RecvMsg(new(wrapperspb.StringValue))
	assert.Equal(t, codes.ResourceExhausted, status.Code(err))
	assert.Equal(t, failure, cl.outcomes(chatMethod), "a failure before the server answered")
	// SendMsg after the end reports io.EOF and records nothing more.
	_ = s.SendMsg(wrapperspb.String("late"))
	assert.Equal(t, failure, cl.outcomes(chatMethod))
}

func TestStreamClientInterceptor_bidiFailureAfterAnswer(t *testing.T) {
	cl := newClient(t)
	s, err := cl.cc.NewStream(context.Background(), &chatDesc, chatMethod)
	require.NoError(t, err)
	require.NoError(t, s.SendMsg(wrapperspb.String("hi")))
	out := new(wrapperspb.StringValue)
	require.NoError(t, s.RecvMsg(out))
	assert.Equal(t, "hi", out.GetValue())
	assert.Equal(t, [3]int64{}, cl.outcomes(chatMethod), "answered, not recorded before the end")
	require.NoError(t, s.SendMsg(wrapperspb.String(fmt.Sprintf("code:%d", codes.ResourceExhausted))))
	err = s.RecvMsg(out)
	assert.Equal(t, codes.ResourceExhausted, status.Code(err))
	assert.Equal(t, failure, cl.outcomes(chatMethod), "a failure after the answer")
}

func TestStreamClientInterceptor_bidiSuccess(t *testing.T) {
	cl := newClient(t)
	s, err := cl.cc.NewStream(context.Background(), &chatDesc, chatMethod)
	require.NoError(t, err)
	require.NoError(t, s.SendMsg(wrapperspb.String("hi")))
	require.NoError(t, s.RecvMsg(new(wrapperspb.StringValue)))
	require.NoError(t, s.CloseSend())
	assert.Equal(t, io.EOF, s.RecvMsg(new(wrapperspb.StringValue)))
	assert.Equal(t, success, cl.outcomes(chatMethod))
}

func TestStreamClientInterceptor_abandonedByCancel(t *testing.T) {
	cl := newClient(t)
	ctx, cancel := context.WithCancel(context.Background())
	s, err := cl.cc.NewStream(ctx, &chatDesc, chatMethod)
	require.NoError(t, err)
	require.NoError(t, s.SendMsg(wrapperspb.String("block")))
	<-cl.server.arrived
	cancel() // the caller walks away before the server answered
	cl.reg.WaitReported(t)
	assert.Equal(t, neither, cl.outcomes(chatMethod))

	// Reading now sees Canceled; it is not recorded a second time.
	assert.Equal(t, codes.Canceled, status.Code(s.RecvMsg(new(wrapperspb.StringValue))))
	assert.Equal(t, neither, cl.outcomes(chatMethod))
}

func TestStreamClientInterceptor_abandonedByDeadline(t *testing.T) {
	cl := newClient(t)
	ctx := newManualDeadline()
	s, err := cl.cc.NewStream(ctx, &chatDesc, chatMethod)
	require.NoError(t, err)
	require.NoError(t, s.SendMsg(wrapperspb.String("block")))
	<-cl.server.arrived
	ctx.Expire() // the deadline passes while the server works on it
	cl.reg.WaitReported(t)
	assert.Equal(t, failure, cl.outcomes(chatMethod), "a deadline is a failure")
	assert.Equal(t, codes.DeadlineExceeded, status.Code(s.RecvMsg(new(wrapperspb.StringValue))))
	assert.Equal(t, failure, cl.outcomes(chatMethod), "recorded exactly once")
}

func TestStreamClientInterceptor_ctxAlreadyDone(t *testing.T) {
	cl := newClient(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := cl.cc.NewStream(ctx, &listDesc, listMethod)
	assert.Equal(t, codes.Canceled, status.Code(err))
	assert.Equal(t, [3]int64{}, cl.outcomes(listMethod))
	assert.Equal(t, int64(0), cl.server.received.Load())
}

func TestStreamClientInterceptor_dropsNeverReachTheServer(t *testing.T) {
	cl := newClient(t)
	openAndFail := func() error {
		s, err := cl.cc.NewStream(context.Background(), &listDesc, listMethod)
		if err != nil {
			return err
		}
		if err := s.SendMsg(wrapperspb.String(fmt.Sprintf("code:%d", codes.Unavailable))); err != nil && err != io.EOF {
			return err
		}
		_ = s.CloseSend()
		return s.RecvMsg(new(wrapperspb.StringValue))
	}
	sent, dropped := int64(0), 0
	for range 200 {
		err := openAndFail()
		require.Equal(t, codes.Unavailable, status.Code(err))
		if errors.Is(err, breaker.ErrServiceUnavailable) {
			dropped++
			continue
		}
		sent++
	}
	assert.Greater(t, dropped, 150)
	assert.Equal(t, sent, cl.server.received.Load(), "dropped streams never reach the server")
	assert.Equal(t, [3]int64{0, sent, 0}, cl.outcomes(listMethod))
}

func TestClientInterceptors_concurrent(t *testing.T) {
	es, addr := startServer(t)
	reg := newRegistry(breaker.WithK(1000)) // never sheds
	unary := grpcbreaker.UnaryClientInterceptor(grpcbreaker.WithBreakers(reg.Get))
	stream := grpcbreaker.StreamClientInterceptor(grpcbreaker.WithBreakers(reg.Get))
	cc := dial(t, addr, grpc.WithUnaryInterceptor(unary), grpc.WithStreamInterceptor(stream))

	const goroutines, calls = 8, 20
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range calls {
				v := "n:2"
				if (g+i)%4 == 0 {
					v = fmt.Sprintf("n:1,code:%d", codes.Internal)
				}
				_, _ = call(context.Background(), cc, v)
				s, err := cc.NewStream(context.Background(), &listDesc, listMethod)
				if !assert.NoError(t, err) {
					continue
				}
				_ = s.SendMsg(wrapperspb.String(v))
				_ = s.CloseSend()
				for s.RecvMsg(new(wrapperspb.StringValue)) == nil {
				}
			}
		}()
	}
	wg.Wait()
	const n = goroutines * calls
	target := addr
	assert.Equal(t, [3]int64{n * 3 / 4, n / 4, 0}, reg.Outcomes(target+callMethod))
	// A stream is recorded when it ends: it answered, and then ended with
	// its status.
	assert.Equal(t, [3]int64{n * 3 / 4, n / 4, 0}, reg.Outcomes(target+listMethod))
	assert.Equal(t, int64(n), reg.Answered(target+listMethod))
	assert.Equal(t, int64(2*n), es.received.Load())
}

func TestInterceptors_invalidOptions(t *testing.T) {
	for _, tc := range []struct {
		opt  grpcbreaker.Option
		want string
	}{
		{grpcbreaker.WithRegistry(nil), "grpcbreaker: invalid option: WithRegistry(nil): registry must not be nil"},
		{grpcbreaker.WithRegistry((*breaker.Registry)(nil)),
			"grpcbreaker: invalid option: WithRegistry(nil): registry must not be nil"},
		{grpcbreaker.WithKey(nil), "grpcbreaker: invalid option: WithKey(nil): key function must not be nil"},
		{grpcbreaker.WithFailureCodes(), "grpcbreaker: invalid option: WithFailureCodes(): at least one code is needed"},
		{grpcbreaker.WithFailureCodes(codes.Internal, codes.OK),
			"grpcbreaker: invalid option: WithFailureCodes(Internal, OK): OK cannot be a failure code; valid codes are Canceled to Unauthenticated"},
		{grpcbreaker.WithFailureCodes(codes.Code(17)),
			"grpcbreaker: invalid option: WithFailureCodes(Code(17)): Code(17) cannot be a failure code; valid codes are Canceled to Unauthenticated"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			ci, err := grpcbreaker.NewClientInterceptors(tc.opt)
			assert.Nil(t, ci)
			assert.ErrorIs(t, err, grpcbreaker.ErrInvalidOption)
			assert.EqualError(t, err, tc.want)
			si, err := grpcbreaker.NewServerInterceptors(tc.opt)
			assert.Nil(t, si)
			assert.ErrorIs(t, err, grpcbreaker.ErrInvalidOption)
			assert.EqualError(t, err, tc.want)
		})
	}
}

func TestDefaultFailureCodes_isACopy(t *testing.T) {
	c := grpcbreaker.DefaultFailureCodes()
	c[0] = codes.NotFound
	assert.Equal(t, codes.Unavailable, grpcbreaker.DefaultFailureCodes()[0])
}

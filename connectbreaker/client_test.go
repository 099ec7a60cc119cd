package connectbreaker_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/connectbreaker"
	"github.com/srebreaker/srebreaker/criticality"
	"github.com/srebreaker/srebreaker/retry"
)

// client is a ClientInterceptor, with a counting registry, in front of the
// test service's clients.
type client struct {
	clients
	server *echoServer
	reg    *countingRegistry
	host   string // the server's address, the start of every key
}

// newClient returns a client of w to a fresh test server.
func newClient(t *testing.T, w wire, opts ...connectbreaker.Option) *client {
	t.Helper()
	es, base := startServer(t)
	return newClientOf(t, w, es, base, opts...)
}

// newClientOf returns a client of w to the test server es at base.
func newClientOf(t *testing.T, w wire, es *echoServer, base string, opts ...connectbreaker.Option) *client {
	t.Helper()
	reg := newRegistry()
	copts := []connectbreaker.ClientOption{connectbreaker.WithBreakers(reg.Get)}
	for _, o := range opts {
		copts = append(copts, o)
	}
	ci, err := connectbreaker.NewClientInterceptor(copts...)
	require.NoError(t, err)
	return &client{clients: newClients(t, w, base, connect.WithInterceptors(ci)), server: es, reg: reg,
		host: strings.TrimPrefix(base, "http://")}
}

func (c *client) outcomes(procedure string) [3]int64 { return c.reg.Outcomes(c.host + procedure) }

var (
	success = [3]int64{1, 0, 0}
	failure = [3]int64{0, 1, 0}
	neither = [3]int64{0, 0, 1}
	nothing = [3]int64{}
)

// defaultFailures are DefaultFailureCodes, written out.
var defaultFailures = map[connect.Code]bool{
	connect.CodeUnavailable: true, connect.CodeDeadlineExceeded: true, connect.CodeResourceExhausted: true,
	connect.CodeInternal: true, connect.CodeDataLoss: true, connect.CodeUnknown: true,
}

// wantOf is how a call that ended with code c from the server is recorded
// by default.
func wantOf(c connect.Code) [3]int64 {
	switch {
	case defaultFailures[c]:
		return failure
	case c == connect.CodeCanceled: // by the server, not the caller: it says nothing
		return neither
	}
	return success
}

func TestClientInterceptor_WrapUnary_classifiesCodes(t *testing.T) {
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			es, base := startServer(t)
			for c := connect.Code(0); c <= connect.CodeUnauthenticated; c++ {
				cl := newClientOf(t, w, es, base)
				_, err := cl.unary(context.Background(), fmt.Sprintf("code:%d", c))
				if c == 0 {
					assert.NoError(t, err)
				} else {
					assert.Equal(t, c, connect.CodeOf(err), "the code the caller gets")
				}
				assert.Equal(t, wantOf(c), cl.outcomes(callProcedure), "[successes failures neither] for %v", c)
			}
			assert.Equal(t, int64(connect.CodeUnauthenticated)+1, es.received.Load())
		})
	}
}

func TestClientInterceptor_WrapStreamingClient_classifiesFinalCodes(t *testing.T) {
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			es, base := startServer(t)
			for c := connect.Code(0); c <= connect.CodeUnauthenticated; c++ {
				cl := newClientOf(t, w, es, base)
				got, err := cl.listAll(context.Background(), fmt.Sprintf("n:2,code:%d", c))
				assert.Equal(t, []string{"0", "1"}, got, "the messages before the end")
				if c == 0 {
					assert.NoError(t, err)
				} else {
					assert.Equal(t, c, connect.CodeOf(err))
				}
				assert.Equal(t, wantOf(c), cl.outcomes(listProcedure), "[successes failures neither] for %v", c)
			}
		})
	}
}

// TestClientInterceptor_streamRecordedAtItsEnd: a stream that answered
// messages, then fails, is a failure, recorded when it ends, not at its
// first message.
func TestClientInterceptor_streamRecordedAtItsEnd(t *testing.T) {
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			es, base := startServer(t)
			es.release = make(chan struct{})
			cl := newClientOf(t, w, es, base)
			stream, err := cl.list.CallServerStream(context.Background(),
				connect.NewRequest(wrapperspb.String("n:3,code:14")))
			require.NoError(t, err)
			defer stream.Close()
			for range 3 {
				require.True(t, stream.Receive(), "a message: %v", stream.Err())
			}
			assert.Equal(t, nothing, cl.outcomes(listProcedure), "nothing recorded before the stream ends")
			close(es.release)
			assert.False(t, stream.Receive())
			assert.Equal(t, connect.CodeUnavailable, connect.CodeOf(stream.Err()))
			assert.Equal(t, failure, cl.outcomes(listProcedure))
		})
	}
}

func TestClientInterceptor_clientAndBidiStreams(t *testing.T) {
	for _, w := range h2cWires() {
		t.Run(w.name, func(t *testing.T) {
			es, base := startServer(t)
			for _, tc := range []struct {
				values []string
				want   [3]int64
			}{
				{[]string{"a", "b"}, success},
				{[]string{"a", "code:13"}, failure},
				{[]string{"a", "code:5"}, success}, // not found: the server answered
			} {
				cl := newClientOf(t, w, es, base)
				cs := cl.collect.CallClientStream(context.Background())
				for _, v := range tc.values {
					if err := cs.Send(wrapperspb.String(v)); err != nil {
						break
					}
				}
				_, err := cs.CloseAndReceive()
				assert.Equal(t, tc.want == failure || tc.values[1] == "code:5", err != nil, "collect %v: %v", tc.values, err)
				assert.Equal(t, tc.want, cl.outcomes(collectProcedure), "collect %v", tc.values)

				bs := cl.chat.CallBidiStream(context.Background())
				for _, v := range tc.values {
					if err := bs.Send(wrapperspb.String(v)); err != nil {
						break
					}
					if _, err := bs.Receive(); err != nil {
						break
					}
				}
				require.NoError(t, bs.CloseRequest())
				_, err = bs.Receive()
				if tc.want == success && tc.values[1] != "code:5" {
					assert.ErrorIs(t, err, io.EOF)
				}
				require.NoError(t, bs.CloseResponse())
				assert.Equal(t, tc.want, cl.outcomes(chatProcedure), "chat %v", tc.values)
			}
		})
	}
}

func TestClientInterceptor_callerCancelIsNeither(t *testing.T) {
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			cl := newClient(t, w)
			ctx, cancel := context.WithCancel(context.Background())
			go func() { <-cl.server.arrived; cancel() }()
			_, err := cl.unary(ctx, "block")
			assert.Equal(t, connect.CodeCanceled, connect.CodeOf(err))
			assert.Equal(t, neither, cl.outcomes(callProcedure), "unary")

			ctx, cancel = context.WithCancel(context.Background())
			go func() { <-cl.server.arrived; cancel() }()
			_, err = cl.listAll(ctx, "n:1,block")
			assert.Equal(t, connect.CodeCanceled, connect.CodeOf(err))
			assert.Equal(t, neither, cl.outcomes(listProcedure), "stream")
		})
	}
}

func TestClientInterceptor_streamLeftEarly(t *testing.T) {
	cl := newClient(t, wires[0])
	cl.server.release = make(chan struct{})
	defer close(cl.server.release)
	stream, err := cl.list.CallServerStream(context.Background(), connect.NewRequest(wrapperspb.String("n:2")))
	require.NoError(t, err)
	require.True(t, stream.Receive())
	require.NoError(t, stream.Close())
	assert.Equal(t, neither, cl.outcomes(listProcedure), "the caller gave up")
}

func TestClientInterceptor_deadlineIsFailure(t *testing.T) {
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			cl := newClient(t, w)
			ctx := newManualDeadline()
			go func() { <-cl.server.arrived; ctx.Expire() }()
			_, err := cl.unary(ctx, "block")
			assert.Equal(t, connect.CodeDeadlineExceeded, connect.CodeOf(err))
			assert.Equal(t, failure, cl.outcomes(callProcedure))
		})
	}
}

func TestClientInterceptor_ctxAlreadyDone(t *testing.T) {
	cl := newClient(t, wires[0])
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := cl.unary(ctx, "hello")
	assert.Equal(t, connect.CodeCanceled, connect.CodeOf(err))
	_, err = cl.listAll(ctx, "hello")
	assert.Equal(t, connect.CodeCanceled, connect.CodeOf(err))
	assert.Equal(t, nothing, cl.outcomes(callProcedure), "nothing is recorded")
	assert.Equal(t, nothing, cl.outcomes(listProcedure), "nothing is recorded")
	assert.Equal(t, int64(0), cl.server.received.Load(), "nothing is sent")
}

// failUntilShedding makes 50 unary calls that fail with unavailable and
// returns how many the breaker admitted.
func failUntilShedding(t *testing.T, cl *client) int64 {
	t.Helper()
	admitted := int64(0)
	for range 50 {
		_, err := cl.unary(context.Background(), fmt.Sprintf("code:%d", connect.CodeUnavailable))
		if !errors.Is(err, breaker.ErrServiceUnavailable) {
			admitted++
		}
	}
	return admitted
}

func TestClientInterceptor_dropsNeverReachTheServer(t *testing.T) {
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			cl := newClient(t, w, connectbreaker.WithKey(connectbreaker.HostKey))
			admitted := failUntilShedding(t, cl)
			require.Less(t, admitted, int64(50), "the breaker sheds")
			require.Equal(t, admitted, cl.server.received.Load())

			_, err := cl.unary(context.Background(), "hello")
			require.ErrorIs(t, err, breaker.ErrServiceUnavailable)
			assert.Equal(t, connect.CodeUnavailable, connect.CodeOf(err))
			assert.Contains(t, err.Error(), "shed by the client's breaker")
			assert.False(t, retry.Retryable(err), "a drop is never retried")

			// The host's breaker guards its streams too: one key for all.
			_, err = cl.listAll(context.Background(), "n:1")
			require.ErrorIs(t, err, breaker.ErrServiceUnavailable)
			assert.Equal(t, connect.CodeUnavailable, connect.CodeOf(err))
			assert.Equal(t, admitted, cl.server.received.Load(), "nothing more reached the server")
		})
	}
}

func TestClientInterceptor_sendsCriticalityAndAttempt(t *testing.T) {
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			got := make(chan http.Header, 4)
			es := &echoServer{arrived: make(chan struct{}, 16), sent: make(chan struct{}, 64)}
			mux := es.mux()
			base := serve(t, http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
				got <- r.Header.Clone()
				mux.ServeHTTP(rw, r)
			}))
			cl := newClientOf(t, w, es, base)

			_, err := cl.unary(context.Background(), "plain")
			require.NoError(t, err)
			h := <-got
			assert.Empty(t, h.Values(connectbreaker.CriticalityHeader), "the default level is not sent")
			assert.Empty(t, h.Values(connectbreaker.AttemptHeader), "a first attempt is not numbered")

			ctx := retry.WithAttempt(criticality.With(context.Background(), criticality.Sheddable), 2)
			_, err = cl.unary(ctx, "retry")
			require.NoError(t, err)
			h = <-got
			assert.Equal(t, []string{"SHEDDABLE"}, h.Values(connectbreaker.CriticalityHeader))
			assert.Equal(t, []string{"2"}, h.Values(connectbreaker.AttemptHeader))

			_, err = cl.listAll(ctx, "n:1")
			require.NoError(t, err)
			h = <-got
			assert.Equal(t, []string{"SHEDDABLE"}, h.Values(connectbreaker.CriticalityHeader), "a stream's")
			assert.Equal(t, []string{"2"}, h.Values(connectbreaker.AttemptHeader), "a stream's")
		})
	}
}

func TestClientInterceptor_retryBudgetSpent(t *testing.T) {
	// The budget is kept on breakers of package breaker: a registry's own,
	// not the counting registry's wrappers.
	es, base := startServer(t)
	cs := newClients(t, wires[0], base, connect.WithInterceptors(
		connectbreaker.MustNewClientInterceptor(connectbreaker.WithRegistry(breaker.MustNewRegistry()))))
	ctx := retry.WithAttempt(context.Background(), 2)
	var spent error
	for range 10 { // the budget allows 3 retries a window at least
		if _, err := cs.unary(ctx, "hello"); err != nil {
			spent = err
			break
		}
	}
	require.ErrorIs(t, spent, retry.ErrBudgetSpent)
	assert.Equal(t, connect.CodeUnavailable, connect.CodeOf(spent))
	assert.False(t, retry.Retryable(spent))
	assert.Equal(t, int64(3), es.received.Load(), "the retries the budget granted")
}

func TestClientInterceptor_panicIsFailure(t *testing.T) {
	reg := newRegistry()
	ci := connectbreaker.MustNewClientInterceptor(connectbreaker.WithBreakers(reg.Get))
	panicking := connect.UnaryInterceptorFunc(func(connect.UnaryFunc) connect.UnaryFunc {
		return func(context.Context, connect.AnyRequest) (connect.AnyResponse, error) { panic("transport bug") }
	})
	_, base := startServer(t)
	c := connect.NewClient[msg, msg](http.DefaultClient, base+callProcedure, connect.WithInterceptors(ci, panicking))
	assert.PanicsWithValue(t, "transport bug", func() {
		_, _ = c.CallUnary(context.Background(), connect.NewRequest(wrapperspb.String("x")))
	})
	assert.Equal(t, failure, reg.Outcomes(strings.TrimPrefix(base, "http://")+callProcedure))
}

func TestClientInterceptor_failureCodes(t *testing.T) {
	cl := newClient(t, wires[0], connectbreaker.WithFailureCodes(connect.CodeNotFound))
	_, err := cl.unary(context.Background(), fmt.Sprintf("code:%d", connect.CodeNotFound))
	require.Error(t, err)
	_, err = cl.unary(context.Background(), fmt.Sprintf("code:%d", connect.CodeUnavailable))
	require.Error(t, err)
	assert.Equal(t, [3]int64{1, 1, 0}, cl.outcomes(callProcedure), "not found a failure, unavailable a success")
}

func TestDefaultKey(t *testing.T) {
	for _, tc := range []struct{ host, procedure, want string }{
		{"127.0.0.1:8080", "/a.B/C", "127.0.0.1:8080/a.B/C"},
		{"", "/a.B/C", "server:/a.B/C"},
	} {
		assert.Equal(t, tc.want, connectbreaker.DefaultKey(context.Background(), tc.host, tc.procedure))
		assert.Equal(t, tc.want, connectbreaker.MemoKey(tc.host, tc.procedure), "the memo's")
	}
	assert.Equal(t, "127.0.0.1:8080", connectbreaker.HostKey(context.Background(), "127.0.0.1:8080", "/a.B/C"))
	assert.Equal(t, "server:connect", connectbreaker.HostKey(context.Background(), "", "/a.B/C"))
}

func TestNewClientInterceptor_invalidOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []connectbreaker.ClientOption
		want string
	}{
		{"nil registry", []connectbreaker.ClientOption{connectbreaker.WithRegistry(nil)},
			"connectbreaker: invalid option: WithRegistry(nil): registry must not be nil"},
		{"nil key", []connectbreaker.ClientOption{connectbreaker.WithKey(nil)},
			"connectbreaker: invalid option: WithKey(nil): key function must not be nil"},
		{"no codes", []connectbreaker.ClientOption{connectbreaker.WithFailureCodes()},
			"connectbreaker: invalid option: WithFailureCodes(): at least one code is needed"},
		{"code 0", []connectbreaker.ClientOption{connectbreaker.WithFailureCodes(connect.CodeInternal, 0)},
			"connectbreaker: invalid option: WithFailureCodes(internal, code_0): code 0 cannot be a failure code; valid codes are canceled to unauthenticated"},
		{"code 17", []connectbreaker.ClientOption{connectbreaker.WithFailureCodes(17)},
			"connectbreaker: invalid option: WithFailureCodes(code_17): code 17 cannot be a failure code; valid codes are canceled to unauthenticated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ci, err := connectbreaker.NewClientInterceptor(tc.opts...)
			assert.Nil(t, ci)
			require.ErrorIs(t, err, connectbreaker.ErrInvalidOption)
			assert.EqualError(t, err, tc.want)
			assert.PanicsWithError(t, tc.want, func() { connectbreaker.MustNewClientInterceptor(tc.opts...) })
		})
	}
}

// TestInterceptors_wrongSide: each interceptor, given to the other side,
// fails the calls it meets there, naming the misuse, and records nothing.
func TestInterceptors_wrongSide(t *testing.T) {
	reg := newRegistry()
	ci := connectbreaker.MustNewClientInterceptor(connectbreaker.WithBreakers(reg.Get))
	hi := connectbreaker.MustNewHandlerInterceptor(connectbreaker.WithBreakers(reg.Get))
	es, base := startServer(t, connect.WithInterceptors(ci))
	cs := newClients(t, wires[0], base)
	_, err := cs.unary(context.Background(), "hello")
	assert.Equal(t, connect.CodeInternal, connect.CodeOf(err))
	assert.Contains(t, err.Error(), "connectbreaker: interceptor on the wrong side: a ClientInterceptor is given to a handler")
	_, err = cs.listAll(context.Background(), "n:1")
	assert.Equal(t, connect.CodeInternal, connect.CodeOf(err))
	assert.Contains(t, err.Error(), "a ClientInterceptor is given to a handler")
	assert.Equal(t, int64(0), es.received.Load())

	es, base = startServer(t)
	cs = newClients(t, wires[0], base, connect.WithInterceptors(hi))
	_, err = cs.unary(context.Background(), "hello")
	require.ErrorIs(t, err, connectbreaker.ErrWrongSide)
	assert.Equal(t, connect.CodeInternal, connect.CodeOf(err))
	_, err = cs.listAll(context.Background(), "n:1")
	require.ErrorIs(t, err, connectbreaker.ErrWrongSide)
	assert.Equal(t, int64(0), es.received.Load(), "nothing is sent")
	assert.Equal(t, nothing, reg.Outcomes(strings.TrimPrefix(base, "http://")+callProcedure))
}

// resetting accepts connections on 127.0.0.1 and resets each once a
// request has arrived, until the test ends; it returns its base URL.
func resetting(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				if req, err := http.ReadRequest(bufio.NewReader(c)); err == nil {
					_, _ = io.Copy(io.Discard, req.Body)
				}
				_ = c.(*net.TCPConn).SetLinger(0) // a close that resets
				_ = c.Close()
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

// TestClientInterceptor_connectionResetIsFailure: connect gives a call
// whose connection the server reset code canceled, which the breaker
// counts as a failure all the same: it is not the caller's cancel.
func TestClientInterceptor_connectionResetIsFailure(t *testing.T) {
	base := resetting(t)
	cl := newClientOf(t, wires[0], nil, base)
	_, err := cl.unary(context.Background(), "hello")
	require.Equal(t, connect.CodeCanceled, connect.CodeOf(err), "connect's code for a reset: %v", err)
	assert.Equal(t, failure, cl.outcomes(callProcedure))
}

// TestOptions_sides: the options of both sides are both option types;
// WithCriticalityPolicy is a HandlerOption alone, so that giving it to
// NewClientInterceptor does not compile.
func TestOptions_sides(t *testing.T) {
	var both any = connectbreaker.WithRegistry(breaker.MustNewRegistry())
	_, isClient := both.(connectbreaker.ClientOption)
	_, isHandler := both.(connectbreaker.HandlerOption)
	assert.True(t, isClient && isHandler, "an Option is both")
	var handlerOnly any = connectbreaker.WithCriticalityPolicy(connectbreaker.IgnoreHeader())
	_, isClient = handlerOnly.(connectbreaker.ClientOption)
	assert.False(t, isClient, "WithCriticalityPolicy is not a ClientOption")
}

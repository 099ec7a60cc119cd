package grpcbreaker_test

import (
	"context"
	"errors"
	"fmt"
	"io"
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

const serverShedMsg = "grpcbreaker: call shed by the server's breaker: the server is overloaded, retry later"

// guardedServer is a test server behind the breaker's server interceptors,
// with a recovering interceptor outside them that turns a panic into
// Internal and hands its value to panics.
type guardedServer struct {
	server *echoServer
	cc     *grpc.ClientConn // a plain client
	reg    *countingRegistry
	panics chan any
}

// serverKey is the key DefaultKey gives a server's breaker for method.
func serverKey(method string) string { return "server:" + method }

func newGuardedServer(t *testing.T, opts ...grpcbreaker.ServerOption) *guardedServer {
	t.Helper()
	reg := newRegistry()
	opts = append([]grpcbreaker.ServerOption{grpcbreaker.WithBreakers(reg.Get)}, opts...)
	unary := grpcbreaker.UnaryServerInterceptor(opts...)
	stream := grpcbreaker.StreamServerInterceptor(opts...)
	panics := make(chan any, 16)
	recoverUnary := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (resp any, err error) {
		defer func() {
			if v := recover(); v != nil {
				panics <- v
				err = status.Error(codes.Internal, "panic")
			}
		}()
		return h(ctx, req)
	}
	recoverStream := func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) (err error) {
		defer func() {
			if v := recover(); v != nil {
				panics <- v
				err = status.Error(codes.Internal, "panic")
			}
		}()
		return h(srv, ss)
	}
	es, addr := startServer(t,
		grpc.ChainUnaryInterceptor(recoverUnary, unary), grpc.ChainStreamInterceptor(recoverStream, stream))
	return &guardedServer{server: es, cc: dial(t, addr), reg: reg, panics: panics}
}

// list opens a List stream with value v and reads it to its end.
func list(ctx context.Context, cc *grpc.ClientConn, v string) error {
	s, err := cc.NewStream(ctx, &listDesc, listMethod)
	if err != nil {
		return err
	}
	if err := s.SendMsg(wrapperspb.String(v)); err != nil && err != io.EOF {
		return err
	}
	if err := s.CloseSend(); err != nil {
		return err
	}
	for {
		if err := s.RecvMsg(new(wrapperspb.StringValue)); err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
	}
}

func TestUnaryServerInterceptor_classifiesCodes(t *testing.T) {
	for _, tc := range []struct {
		code codes.Code
		want [3]int64
	}{
		{codes.OK, success}, {codes.NotFound, success}, {codes.InvalidArgument, success},
		{codes.Canceled, neither},
		{codes.Internal, failure}, {codes.Unavailable, failure}, {codes.Unknown, failure},
		{codes.ResourceExhausted, failure}, {codes.DeadlineExceeded, failure}, {codes.DataLoss, failure},
	} {
		t.Run(tc.code.String(), func(t *testing.T) {
			gs := newGuardedServer(t)
			_, err := call(context.Background(), gs.cc, fmt.Sprintf("code:%d", tc.code))
			assert.Equal(t, tc.code, status.Code(err))
			assert.Equal(t, tc.want, gs.reg.Outcomes(serverKey(callMethod)))
		})
	}
}

func TestUnaryServerInterceptor_clientCancelIsIgnored(t *testing.T) {
	gs := newGuardedServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-gs.server.arrived; cancel() }()
	_, err := call(ctx, gs.cc, "block")
	assert.Equal(t, codes.Canceled, status.Code(err))
	gs.reg.WaitReported(t) // the handler returns after the client has gone
	assert.Equal(t, neither, gs.reg.Outcomes(serverKey(callMethod)), "the client gave up: the server is not to blame")
}

// A handler that fails after its client left, the failure its own (an
// error it made of its context's cancel), counts as neither: no one gets
// its answer.
func TestUnaryServerInterceptor_failureAfterTheClientLeftIsIgnored(t *testing.T) {
	gs := newGuardedServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-gs.server.arrived; cancel() }()
	_, err := call(ctx, gs.cc, fmt.Sprintf("late,code:%d", codes.Unavailable))
	assert.Equal(t, codes.Canceled, status.Code(err))
	gs.reg.WaitReported(t)
	assert.Equal(t, neither, gs.reg.Outcomes(serverKey(callMethod)), "the client gave up: the server is not to blame")

	_, err = call(context.Background(), gs.cc, fmt.Sprintf("code:%d", codes.Unavailable))
	assert.Equal(t, codes.Unavailable, status.Code(err))
	assert.Equal(t, [3]int64{0, 1, 1}, gs.reg.Outcomes(serverKey(callMethod)), "with its client there, the failure counts")
}

func TestUnaryServerInterceptor_sheds(t *testing.T) {
	gs := newGuardedServer(t)
	served, shed := int64(0), 0
	for range 200 {
		_, err := call(context.Background(), gs.cc, fmt.Sprintf("code:%d", codes.Internal))
		switch status.Code(err) {
		case codes.Internal:
			served++
		case codes.Unavailable:
			shed++
			assert.Equal(t, serverShedMsg, status.Convert(err).Message(),
				"the client learns nothing of the server's failure reasons")
		default:
			t.Fatalf("unexpected error: %v", err)
		}
	}
	assert.Greater(t, shed, 150, "a failing server sheds")
	assert.Equal(t, served, gs.server.received.Load(), "a shed call never reaches the handler")
	assert.Equal(t, [3]int64{0, served, 0}, gs.reg.Outcomes(serverKey(callMethod)), "sheds are not recorded")
}

func TestUnaryServerInterceptor_panicIsFailureAndRaised(t *testing.T) {
	gs := newGuardedServer(t)
	_, err := call(context.Background(), gs.cc, "panic")
	assert.Equal(t, codes.Internal, status.Code(err))
	assert.Equal(t, "handler bug", <-gs.panics, "the same value is raised again")
	assert.Equal(t, failure, gs.reg.Outcomes(serverKey(callMethod)))
}

func TestUnaryServerInterceptor_withKey(t *testing.T) {
	gs := newGuardedServer(t, grpcbreaker.WithKey(func(context.Context, string, string) string { return "server" }))
	_, err := call(context.Background(), gs.cc, "a")
	require.NoError(t, err)
	require.NoError(t, list(context.Background(), gs.cc, "n:1"))
	assert.Equal(t, [3]int64{2, 0, 0}, gs.reg.Outcomes("server"))
}

func TestStreamServerInterceptor_classifies(t *testing.T) {
	gs := newGuardedServer(t)
	require.NoError(t, list(context.Background(), gs.cc, "n:3"))
	assert.Equal(t, success, gs.reg.Outcomes(serverKey(listMethod)))
	err := list(context.Background(), gs.cc, fmt.Sprintf("code:%d", codes.Unavailable))
	assert.Equal(t, codes.Unavailable, status.Code(err))
	assert.Equal(t, [3]int64{1, 1, 0}, gs.reg.Outcomes(serverKey(listMethod)))
	err = list(context.Background(), gs.cc, fmt.Sprintf("code:%d", codes.NotFound))
	assert.Equal(t, codes.NotFound, status.Code(err))
	assert.Equal(t, [3]int64{2, 1, 0}, gs.reg.Outcomes(serverKey(listMethod)))
	// The handler answered with a message, then failed: a failure.
	err = list(context.Background(), gs.cc, fmt.Sprintf("n:1,code:%d", codes.Unavailable))
	assert.Equal(t, codes.Unavailable, status.Code(err))
	assert.Equal(t, [3]int64{2, 2, 0}, gs.reg.Outcomes(serverKey(listMethod)))
	assert.Equal(t, int64(2), gs.reg.Answered(serverKey(listMethod)), "the streams with messages answered")
}

func TestStreamServerInterceptor_sheds(t *testing.T) {
	gs := newGuardedServer(t)
	served, shed := int64(0), 0
	for range 200 {
		err := list(context.Background(), gs.cc, fmt.Sprintf("code:%d", codes.Internal))
		switch status.Code(err) {
		case codes.Internal:
			served++
		case codes.Unavailable:
			shed++
			assert.Equal(t, serverShedMsg, status.Convert(err).Message())
		default:
			t.Fatalf("unexpected error: %v", err)
		}
	}
	assert.Greater(t, shed, 150)
	assert.Equal(t, served, gs.server.received.Load(), "a shed stream never reaches the handler")
	assert.Equal(t, [3]int64{0, served, 0}, gs.reg.Outcomes(serverKey(listMethod)))
}

func TestStreamServerInterceptor_panicIsFailureAndRaised(t *testing.T) {
	gs := newGuardedServer(t)
	err := list(context.Background(), gs.cc, "panic")
	assert.Equal(t, codes.Internal, status.Code(err))
	assert.Equal(t, "handler bug", <-gs.panics)
	assert.Equal(t, failure, gs.reg.Outcomes(serverKey(listMethod)))
}

func TestServerInterceptors_shedErrorInProcess(t *testing.T) {
	// Inside the server, an interceptor outside the breaker's can tell a
	// shed call with errors.Is.
	reg := newRegistry()
	unary := grpcbreaker.UnaryServerInterceptor(grpcbreaker.WithBreakers(reg.Get))
	info := &grpc.UnaryServerInfo{FullMethod: callMethod}
	failing := func(context.Context, any) (any, error) { return nil, status.Error(codes.Internal, "down") }
	var shedErr error
	for range 100 {
		if _, err := unary(context.Background(), nil, info, failing); status.Code(err) == codes.Unavailable {
			shedErr = err
			break
		}
	}
	require.Error(t, shedErr, "the interceptor sheds a failing handler")
	assert.True(t, errors.Is(shedErr, breaker.ErrServiceUnavailable))
	assert.EqualError(t, shedErr, serverShedMsg)
}

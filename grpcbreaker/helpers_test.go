package grpcbreaker_test

import (
	"context"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/srebreaker/srebreaker/internal/transporttest"
)

// The test service, test.Echo, is described by hand; its messages are
// wrapperspb.StringValue. A request's value, a comma-separated list, says
// what the server does:
//
//	"code:N"  ends the call with status code N (after the messages of n:)
//	"n:K"     (List only) sends K messages first
//	"block"   tells arrived, then waits until the call's context is done
//	"late"    tells arrived, waits until the call's context is done, and
//	          goes on with the rest of the value
//	"hold"    tells arrived, then waits for release (or the context) and
//	          goes on with the rest of the value
//	"header," (List only, as a prefix) sends the header first
//	"panic"   panics
//	anything else: answers with the same value
const (
	callMethod    = "/test.Echo/Call"
	listMethod    = "/test.Echo/List"
	collectMethod = "/test.Echo/Collect"
	chatMethod    = "/test.Echo/Chat"
)

var (
	listDesc    = grpc.StreamDesc{StreamName: "List", Handler: listHandler, ServerStreams: true}
	collectDesc = grpc.StreamDesc{StreamName: "Collect", Handler: collectHandler, ClientStreams: true}
	chatDesc    = grpc.StreamDesc{StreamName: "Chat", Handler: chatHandler, ServerStreams: true, ClientStreams: true}
	echoDesc    = grpc.ServiceDesc{
		ServiceName: "test.Echo",
		HandlerType: (*any)(nil),
		Methods:     []grpc.MethodDesc{{MethodName: "Call", Handler: callHandler}},
		Streams:     []grpc.StreamDesc{listDesc, collectDesc, chatDesc},
	}
)

// echoServer counts the calls that reach its handlers.
type echoServer struct {
	received atomic.Int64
	arrived  chan struct{}
	release  chan struct{} // lets a "hold" go on
}

// has reports whether the comma-separated value v has part.
func has(v, part string) bool { return slices.Contains(strings.Split(v, ","), part) }

// parse reads "code:N" and "n:K" out of a comma-separated value.
func parse(v string) (code codes.Code, n int) {
	for _, part := range strings.Split(v, ",") {
		if s, ok := strings.CutPrefix(part, "code:"); ok {
			c, _ := strconv.Atoi(s)
			code = codes.Code(c)
		}
		if s, ok := strings.CutPrefix(part, "n:"); ok {
			n, _ = strconv.Atoi(s)
		}
	}
	return code, n
}

func (s *echoServer) answer(ctx context.Context, v string) (*wrapperspb.StringValue, error) {
	if has(v, "block") {
		s.arrived <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if has(v, "late") {
		s.arrived <- struct{}{}
		<-ctx.Done()
	}
	if has(v, "hold") {
		s.arrived <- struct{}{}
		select {
		case <-s.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if has(v, "panic") {
		panic("handler bug")
	}
	if c, _ := parse(v); c != codes.OK {
		return nil, status.Error(c, "told to fail with "+c.String())
	}
	return wrapperspb.String(v), nil
}

func callHandler(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
	in := new(wrapperspb.StringValue)
	if err := dec(in); err != nil {
		return nil, err
	}
	h := func(ctx context.Context, req any) (any, error) {
		s := srv.(*echoServer)
		s.received.Add(1)
		return s.answer(ctx, req.(*wrapperspb.StringValue).GetValue())
	}
	if interceptor == nil {
		return h(ctx, in)
	}
	return interceptor(ctx, in, &grpc.UnaryServerInfo{Server: srv, FullMethod: callMethod}, h)
}

func listHandler(srv any, stream grpc.ServerStream) error {
	s := srv.(*echoServer)
	s.received.Add(1)
	in := new(wrapperspb.StringValue)
	if err := stream.RecvMsg(in); err != nil {
		return err
	}
	v, header := strings.CutPrefix(in.GetValue(), "header,")
	if header {
		if err := stream.SendHeader(nil); err != nil {
			return err
		}
	}
	_, n := parse(v)
	for i := range n {
		if err := stream.SendMsg(wrapperspb.String(strconv.Itoa(i))); err != nil {
			return err
		}
	}
	_, err := s.answer(stream.Context(), v)
	return err
}

func collectHandler(srv any, stream grpc.ServerStream) error {
	s := srv.(*echoServer)
	s.received.Add(1)
	var got []string
	for {
		in := new(wrapperspb.StringValue)
		if err := stream.RecvMsg(in); err != nil {
			break
		}
		if _, err := s.answer(stream.Context(), in.GetValue()); err != nil {
			return err
		}
		got = append(got, in.GetValue())
	}
	return stream.SendMsg(wrapperspb.String(strings.Join(got, "+")))
}

func chatHandler(srv any, stream grpc.ServerStream) error {
	s := srv.(*echoServer)
	s.received.Add(1)
	for {
		in := new(wrapperspb.StringValue)
		if err := stream.RecvMsg(in); err != nil {
			return nil // the client closed its side
		}
		out, err := s.answer(stream.Context(), in.GetValue())
		if err != nil {
			return err
		}
		if err := stream.SendMsg(out); err != nil {
			return err
		}
	}
}

// startServer runs the test service on 127.0.0.1 with a port the system
// picks, until the test ends, and returns it and its address.
func startServer(t *testing.T, opts ...grpc.ServerOption) (*echoServer, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer(opts...)
	es := &echoServer{arrived: make(chan struct{}, 16), release: make(chan struct{}, 16)}
	srv.RegisterService(&echoDesc, es)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	return es, ln.Addr().String()
}

// dial returns a client connection to addr, closed when the test ends.
func dial(t *testing.T, addr string, opts ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient("passthrough:///"+addr,
		append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

// call makes a unary call with value v.
func call(ctx context.Context, cc *grpc.ClientConn, v string) (string, error) {
	out := new(wrapperspb.StringValue)
	err := cc.Invoke(ctx, callMethod, wrapperspb.String(v), out)
	return out.GetValue(), err
}

// The helpers the transports' tests share, under the names these tests
// use.
type countingRegistry = transporttest.Registry

var (
	newRegistry       = transporttest.NewRegistry
	newManualDeadline = transporttest.NewManualDeadline
)

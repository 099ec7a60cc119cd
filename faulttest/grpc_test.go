package faulttest

import (
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/grpcbreaker"
)

// The test service, described by hand, with wrapperspb.StringValue
// messages: Call answers what its handler gives; List streams that
// answer as its one message.
const (
	callMethod = "/fault.Dep/Call"
	listMethod = "/fault.Dep/List"
)

var listDesc = grpc.StreamDesc{StreamName: "List", ServerStreams: true}

// depService answers with answerFunc's value, or its error.
type depService struct {
	answer func(ctx context.Context) (string, error)
}

// serviceDesc describes the service for s, whose handlers run the
// interceptors the server was given.
func (s *depService) serviceDesc() *grpc.ServiceDesc {
	list := listDesc
	list.Handler = func(_ any, stream grpc.ServerStream) error {
		in := new(wrapperspb.StringValue)
		if err := stream.RecvMsg(in); err != nil {
			return err
		}
		v, err := s.answer(stream.Context())
		if err != nil {
			return err
		}
		return stream.SendMsg(wrapperspb.String(v))
	}
	return &grpc.ServiceDesc{
		ServiceName: "fault.Dep",
		HandlerType: (*any)(nil),
		Methods: []grpc.MethodDesc{{MethodName: "Call", Handler: func(_ any, ctx context.Context,
			dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
			in := new(wrapperspb.StringValue)
			if err := dec(in); err != nil {
				return nil, err
			}
			h := func(ctx context.Context, _ any) (any, error) {
				v, err := s.answer(ctx)
				if err != nil {
					return nil, err
				}
				return wrapperspb.String(v), nil
			}
			if interceptor == nil {
				return h(ctx, in)
			}
			return interceptor(ctx, in, &grpc.UnaryServerInfo{FullMethod: callMethod}, h)
		}}},
		Streams: []grpc.StreamDesc{list},
	}
}

// serveGRPC runs s on a free port of 127.0.0.1 until the test ends and
// returns its address.
func serveGRPC(t *testing.T, s *depService, opts ...grpc.ServerOption) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer(opts...)
	srv.RegisterService(s.serviceDesc(), s)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	return ln.Addr().String()
}

// dialGRPC returns a client of addr, closed when the test ends. It
// reconnects within 10 to 100 ms of real time, and its windows are large
// enough for every answer a black hole drops, which the server counts as
// sent: the connection is not stalled by them after healing.
func dialGRPC(t *testing.T, addr string, opts ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient("passthrough:///"+addr, append([]grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 10 * time.Millisecond, Multiplier: 1.6, MaxDelay: 100 * time.Millisecond},
			MinConnectTimeout: 10 * time.Second,
		}),
		grpc.WithInitialWindowSize(1 << 28),
		grpc.WithInitialConnWindowSize(1 << 30),
	}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

// readyGRPC returns a function that returns once cc is connected.
func readyGRPC(t *testing.T, cc *grpc.ClientConn) func() {
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for {
			s := cc.GetState()
			if s == connectivity.Ready {
				return
			}
			cc.Connect()
			if !cc.WaitForStateChange(ctx, s) {
				t.Errorf("the client connection is not ready after a minute (%v)", s)
				return
			}
		}
	}
}

// callKind is how a test calls the service: a unary call or a stream.
type callKind struct {
	name string
	// call calls through cc with ctx and returns an error for anything but
	// answerBody.
	call func(ctx context.Context, cc *grpc.ClientConn) error
}

var (
	unary = callKind{"unary", func(ctx context.Context, cc *grpc.ClientConn) error {
		out := new(wrapperspb.StringValue)
		if err := cc.Invoke(ctx, callMethod, wrapperspb.String("q"), out); err != nil {
			return err
		}
		return checkAnswer(out.GetValue())
	}}
	stream = callKind{"stream", func(ctx context.Context, cc *grpc.ClientConn) error {
		cs, err := cc.NewStream(ctx, &listDesc, listMethod)
		if err != nil {
			return err
		}
		if err := cs.SendMsg(wrapperspb.String("q")); err != nil && err != io.EOF {
			return err
		}
		if err := cs.CloseSend(); err != nil {
			return err
		}
		var got []string
		for {
			out := new(wrapperspb.StringValue)
			err := cs.RecvMsg(out)
			if err == io.EOF {
				break
			}
			if err != nil {
				return err
			}
			got = append(got, out.GetValue())
		}
		if len(got) != 1 {
			return errors.New("the stream did not answer one message")
		}
		return checkAnswer(got[0])
	}}
)

func checkAnswer(v string) error {
	if v != answerBody {
		return errors.New("the answer is not what the dependency sent")
	}
	return nil
}

// withCallID puts call id in ctx's outgoing metadata.
func withCallID(ctx context.Context, id int) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "call", strconv.Itoa(id))
}

// incomingID reads the call id of an incoming call, or -1.
func incomingID(ctx context.Context) int {
	md, _ := metadata.FromIncomingContext(ctx)
	if v := md.Get("call"); len(v) == 1 {
		if id, err := strconv.Atoi(v[0]); err == nil {
			return id
		}
	}
	return -1
}

// hookStream tells the harness when a stream's answer arrived (its
// header, its first message or its end, which grpcbreaker records it at)
// and holds it until the call's virtual release.
type hookStream struct {
	grpc.ClientStream
	h   *harness
	id  int
	ctx context.Context
}

func (s *hookStream) Header() (metadata.MD, error) {
	md, err := s.ClientStream.Header()
	s.h.answer(s.ctx, s.id)
	return md, err
}

func (s *hookStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	s.h.answer(s.ctx, s.id)
	return err
}

// clientBuild builds the client interceptors' test of kind k: a server
// behind the proxy, called through the interceptor, and, inside it, hooks
// that tell the harness when a call is let through and hold its answer.
func clientBuild(k callKind) build {
	return func(t *testing.T, h *harness) (integration, *proxy) {
		addr := serveGRPC(t, &depService{answer: func(context.Context) (string, error) { return answerBody, nil }})
		p := newProxy(t, addr)
		interceptors, err := grpcbreaker.NewClientInterceptors(grpcbreaker.WithRegistry(h.reg))
		require.NoError(t, err)
		cc := dialGRPC(t, p.addr(),
			grpc.WithChainUnaryInterceptor(interceptors.Unary(),
				func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn,
					invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
					id := callID(ctx)
					h.admit(id)
					err := invoker(ctx, method, req, reply, cc, opts...)
					h.answer(ctx, id)
					return err
				}),
			grpc.WithChainStreamInterceptor(interceptors.Stream(),
				func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string,
					streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
					id := callID(ctx)
					h.admit(id)
					cs, err := streamer(ctx, desc, cc, method, opts...)
					if err != nil {
						h.answer(ctx, id)
						return nil, err
					}
					return &hookStream{ClientStream: cs, h: h, id: id, ctx: ctx}, nil
				}),
		)
		return integration{ready: readyGRPC(t, cc), do: func(ctx context.Context, id int) error {
			err := k.call(ctx, cc)
			if err != nil && !closed(h.get(id).admitted) && !errors.Is(err, breaker.ErrServiceUnavailable) {
				return errors.Join(errors.New("failed before it was let through, not dropped"), err)
			}
			return err
		}}, p
	}
}

// serverBuild builds the server interceptors' test of kind k: a server
// whose handler calls a dependency behind the proxy, with the interceptor
// in front of it; its clients call it directly.
func serverBuild(k callKind) build {
	return func(t *testing.T, h *harness) (integration, *proxy) {
		p := backend(t)
		dep := newHTTPClient(t, newHTTPTransport())
		url := "http://" + p.addr() + "/"
		s := &depService{answer: func(ctx context.Context) (string, error) {
			id := incomingID(ctx)
			h.admit(id)
			err := get(ctx, dep, url, id)
			h.answer(ctx, id)
			if ctx.Err() != nil {
				return "", status.FromContextError(ctx.Err()).Err() // the client gave up
			}
			if err != nil {
				return "", status.Error(codes.Unavailable, err.Error())
			}
			return answerBody, nil
		}}
		interceptors, err := grpcbreaker.NewServerInterceptors(grpcbreaker.WithRegistry(h.reg))
		require.NoError(t, err)
		addr := serveGRPC(t, s,
			grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo,
				handler grpc.UnaryHandler) (any, error) {
				defer h.finished(incomingID(ctx))
				return handler(ctx, req)
			}, interceptors.Unary()),
			grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo,
				handler grpc.StreamHandler) error {
				defer h.finished(incomingID(ss.Context()))
				return handler(srv, ss)
			}, interceptors.Stream()))
		cc := dialGRPC(t, addr)
		return integration{serverSide: true, do: func(ctx context.Context, id int) error {
			return k.call(withCallID(ctx, id), cc)
		}}, p
	}
}

// TestUnaryClientInterceptor_faults: a unary client interceptor in front of
// a gRPC server behind the proxy.
func TestUnaryClientInterceptor_faults(t *testing.T) { runFaults(t, clientBuild(unary)) }

// TestStreamClientInterceptor_faults: a stream client interceptor in front
// of a server-streaming call to a gRPC server behind the proxy.
func TestStreamClientInterceptor_faults(t *testing.T) { runFaults(t, clientBuild(stream)) }

// TestUnaryServerInterceptor_faults: a unary server interceptor in front of
// a handler whose dependency is behind the proxy.
func TestUnaryServerInterceptor_faults(t *testing.T) { runFaults(t, serverBuild(unary)) }

// TestStreamServerInterceptor_faults: a stream server interceptor in front
// of a server-streaming handler whose dependency is behind the proxy.
func TestStreamServerInterceptor_faults(t *testing.T) { runFaults(t, serverBuild(stream)) }

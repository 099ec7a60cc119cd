package faulttest

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/connectbreaker"
)

// The Connect service, written by hand, with wrapperspb.StringValue
// messages: Call answers what its handler gives; List streams that answer
// as its one message.
const (
	connectCall = "/fault.ConnectDep/Call"
	connectList = "/fault.ConnectDep/List"
)

type strMsg = wrapperspb.StringValue

// serveConnect runs the service on a free port of 127.0.0.1, over
// HTTP/1.1, until the test ends, with answer as its handlers' answer and
// opts, and returns its address.
func serveConnect(t *testing.T, answer func(ctx context.Context, h http.Header) (string, error),
	opts ...connect.HandlerOption) string {
	mux := http.NewServeMux()
	mux.Handle(connectCall, connect.NewUnaryHandler(connectCall,
		func(ctx context.Context, req *connect.Request[strMsg]) (*connect.Response[strMsg], error) {
			v, err := answer(ctx, req.Header())
			if err != nil {
				return nil, err
			}
			return connect.NewResponse(wrapperspb.String(v)), nil
		}, opts...))
	mux.Handle(connectList, connect.NewServerStreamHandler(connectList,
		func(ctx context.Context, req *connect.Request[strMsg], stream *connect.ServerStream[strMsg]) error {
			v, err := answer(ctx, req.Header())
			if err != nil {
				return err
			}
			return stream.Send(wrapperspb.String(v))
		}, opts...))
	return serve(t, mux)
}

// connectKind is how a test calls the Connect service.
type connectKind struct {
	name string
	// proto is the client's protocol; nil for Connect's.
	proto connect.ClientOption
	// call calls the service at base through hc with ctx and returns an
	// error for anything but answerBody.
	call func(ctx context.Context, hc *http.Client, base string, opts []connect.ClientOption, id int) error
}

func connectRequest(id int) *connect.Request[strMsg] {
	req := connect.NewRequest(wrapperspb.String("q"))
	req.Header().Set(callHeader, strconv.Itoa(id))
	return req
}

func connectUnary(ctx context.Context, hc *http.Client, base string, opts []connect.ClientOption, id int) error {
	resp, err := connect.NewClient[strMsg, strMsg](hc, base+connectCall, opts...).CallUnary(ctx, connectRequest(id))
	if err != nil {
		return err
	}
	return checkAnswer(resp.Msg.GetValue())
}

func connectStream(ctx context.Context, hc *http.Client, base string, opts []connect.ClientOption, id int) error {
	stream, err := connect.NewClient[strMsg, strMsg](hc, base+connectList, opts...).CallServerStream(ctx, connectRequest(id))
	if err != nil {
		return err
	}
	defer stream.Close()
	var got []string
	for stream.Receive() {
		got = append(got, stream.Msg().GetValue())
	}
	if err := stream.Err(); err != nil {
		return err
	}
	if len(got) != 1 {
		return errors.New("the stream did not answer one message")
	}
	return checkAnswer(got[0])
}

var (
	connectUnaryKind  = connectKind{name: "connect unary", call: connectUnary}
	grpcWebUnaryKind  = connectKind{name: "gRPC-Web unary", proto: connect.WithGRPCWeb(), call: connectUnary}
	connectStreamKind = connectKind{name: "connect stream", call: connectStream}
)

// connectClientBuild builds the ClientInterceptor's test of kind k: a
// Connect server behind the proxy, called over HTTP/1.1 through the
// interceptor, and, under it, the hook of the HTTP tests, which tells the
// harness when a call is let through and holds its answer.
func connectClientBuild(k connectKind) build {
	return func(t *testing.T, h *harness) (integration, *proxy) {
		addr := serveConnect(t, func(context.Context, http.Header) (string, error) { return answerBody, nil })
		p := newProxy(t, addr)
		hc := newHTTPClient(t, &hookTransport{h: h, base: newHTTPTransport()})
		opts := []connect.ClientOption{connect.WithInterceptors(
			connectbreaker.MustNewClientInterceptor(connectbreaker.WithRegistry(h.reg)))}
		if k.proto != nil {
			opts = append(opts, k.proto)
		}
		base := "http://" + p.addr()
		return integration{ready: hc.CloseIdleConnections, do: func(ctx context.Context, id int) error {
			err := k.call(ctx, hc, base, opts, id)
			if err != nil && !closed(h.get(id).admitted) && !errors.Is(err, breaker.ErrServiceUnavailable) {
				return errors.Join(errors.New("failed before it was let through, not dropped"), err)
			}
			return err
		}}, p
	}
}

// connectHandlerBuild builds the HandlerInterceptor's test of kind k: a
// Connect handler whose dependency is behind the proxy, with the
// interceptor in front of it; its clients call it directly.
func connectHandlerBuild(k connectKind) build {
	return func(t *testing.T, h *harness) (integration, *proxy) {
		p := backend(t)
		dep := newHTTPClient(t, newHTTPTransport())
		url := "http://" + p.addr() + "/"
		finished := connect.UnaryInterceptorFunc(func(next connect.UnaryFunc) connect.UnaryFunc {
			return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
				defer h.finished(connectID(req.Header()))
				return next(ctx, req)
			}
		})
		addr := serveConnect(t, func(ctx context.Context, hdr http.Header) (string, error) {
			id := connectID(hdr)
			h.admit(id)
			err := get(ctx, dep, url, id)
			h.answer(ctx, id)
			if ctx.Err() != nil {
				return "", ctx.Err() // the client gave up
			}
			if err != nil {
				return "", connect.NewError(connect.CodeUnavailable, err)
			}
			return answerBody, nil
		}, connect.WithInterceptors(finished,
			connectbreaker.MustNewHandlerInterceptor(connectbreaker.WithRegistry(h.reg))))
		hc := newHTTPClient(t, newHTTPTransport())
		var opts []connect.ClientOption
		if k.proto != nil {
			opts = append(opts, k.proto)
		}
		base := "http://" + addr
		return integration{serverSide: true, do: func(ctx context.Context, id int) error {
			return k.call(ctx, hc, base, opts, id)
		}}, p
	}
}

// connectID reads the call id of an incoming call, or -1.
func connectID(h http.Header) int {
	id, err := strconv.Atoi(h.Get(callHeader))
	if err != nil {
		return -1
	}
	return id
}

// TestConnectClientInterceptor_faults: a ClientInterceptor in front of a
// Connect server behind the proxy: unary calls of the Connect and the
// gRPC-Web protocol (whose code comes in the trailers of a 200 response),
// and a server stream of the Connect protocol (in its end-of-stream
// message).
func TestConnectClientInterceptor_faults(t *testing.T) {
	for _, k := range []connectKind{connectUnaryKind, grpcWebUnaryKind, connectStreamKind} {
		t.Run(k.name, func(t *testing.T) { runFaults(t, connectClientBuild(k)) })
	}
}

// TestConnectHandlerInterceptor_faults: a HandlerInterceptor in front of a
// Connect handler whose dependency is behind the proxy.
func TestConnectHandlerInterceptor_faults(t *testing.T) {
	runFaults(t, connectHandlerBuild(connectUnaryKind))
}

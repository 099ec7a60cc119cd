package connectbreaker_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/srebreaker/srebreaker/internal/transporttest"
)

// The test service, test.Echo, is written by hand; its messages are
// wrapperspb.StringValue, with connect's default codec. A request's value
// says what the handler does:
//
//	"code:N"  ends the call with code N (after the messages of n:)
//	"n:K"     (List only) sends K messages first
//	"block"   tells arrived, then waits until the call's context is done
//	"late,"   (a prefix) tells arrived, waits until the call's context is
//	          done, and goes on with the rest of the value
//	"panic"   panics
//	anything else: answers with the same value
const (
	callProcedure    = "/test.Echo/Call"
	listProcedure    = "/test.Echo/List"
	collectProcedure = "/test.Echo/Collect"
	chatProcedure    = "/test.Echo/Chat"
)

type msg = wrapperspb.StringValue

// echoServer counts the calls that reach its handlers.
type echoServer struct {
	received atomic.Int64
	arrived  chan struct{}
	// sent gets a value after each message List sends, for tests that look
	// at a stream before it ends.
	sent chan struct{}
	// release, when not nil, holds List after its messages until closed.
	release chan struct{}
}

// parse reads "code:N" and "n:K" out of a comma-separated value.
func parse(v string) (code connect.Code, n int) {
	for _, part := range strings.Split(v, ",") {
		if s, ok := strings.CutPrefix(part, "code:"); ok {
			c, _ := strconv.Atoi(s)
			code = connect.Code(c)
		}
		if s, ok := strings.CutPrefix(part, "n:"); ok {
			n, _ = strconv.Atoi(s)
		}
	}
	return code, n
}

func (s *echoServer) answer(ctx context.Context, v string) (*msg, error) {
	if strings.HasSuffix(v, ",block") {
		v = "block"
	}
	if rest, ok := strings.CutPrefix(v, "late,"); ok {
		s.arrived <- struct{}{}
		<-ctx.Done()
		v = rest
	}
	switch v {
	case "block":
		s.arrived <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	case "panic":
		panic("handler bug")
	}
	if c, _ := parse(v); c != 0 {
		return nil, connect.NewError(c, errors.New("told to fail with "+c.String()))
	}
	return wrapperspb.String(v), nil
}

// mux returns the service's handlers with opts.
func (s *echoServer) mux(opts ...connect.HandlerOption) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle(callProcedure, connect.NewUnaryHandler(callProcedure,
		func(ctx context.Context, req *connect.Request[msg]) (*connect.Response[msg], error) {
			s.received.Add(1)
			out, err := s.answer(ctx, req.Msg.GetValue())
			if err != nil {
				return nil, err
			}
			return connect.NewResponse(out), nil
		}, opts...))
	mux.Handle(listProcedure, connect.NewServerStreamHandler(listProcedure,
		func(ctx context.Context, req *connect.Request[msg], stream *connect.ServerStream[msg]) error {
			s.received.Add(1)
			_, n := parse(req.Msg.GetValue())
			for i := range n {
				if err := stream.Send(wrapperspb.String(strconv.Itoa(i))); err != nil {
					return err
				}
				select {
				case s.sent <- struct{}{}:
				default:
				}
			}
			if s.release != nil {
				<-s.release
			}
			_, err := s.answer(ctx, req.Msg.GetValue())
			return err
		}, opts...))
	mux.Handle(collectProcedure, connect.NewClientStreamHandler(collectProcedure,
		func(ctx context.Context, stream *connect.ClientStream[msg]) (*connect.Response[msg], error) {
			s.received.Add(1)
			var got []string
			for stream.Receive() {
				if _, err := s.answer(ctx, stream.Msg().GetValue()); err != nil {
					return nil, err
				}
				got = append(got, stream.Msg().GetValue())
			}
			if err := stream.Err(); err != nil {
				return nil, err
			}
			return connect.NewResponse(wrapperspb.String(strings.Join(got, "+"))), nil
		}, opts...))
	mux.Handle(chatProcedure, connect.NewBidiStreamHandler(chatProcedure,
		func(ctx context.Context, stream *connect.BidiStream[msg, msg]) error {
			s.received.Add(1)
			for {
				in, err := stream.Receive()
				if err != nil {
					return nil // the client closed its side
				}
				out, err := s.answer(ctx, in.GetValue())
				if err != nil {
					return err
				}
				if err := stream.Send(out); err != nil {
					return err
				}
			}
		}, opts...))
	return mux
}

// startServer runs the test service on 127.0.0.1 with a port the system
// picks, serving HTTP/1.1 and HTTP/2 without TLS (h2c), until the test
// ends, and returns it and its base URL.
func startServer(t testing.TB, opts ...connect.HandlerOption) (*echoServer, string) {
	t.Helper()
	es := &echoServer{arrived: make(chan struct{}, 16), sent: make(chan struct{}, 64)}
	return es, serve(t, es.mux(opts...))
}

// serve runs h on 127.0.0.1 until the test ends and returns its base URL.
func serve(t testing.TB, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true)
	srv := &http.Server{Handler: h, Protocols: &protocols, ReadHeaderTimeout: time.Minute}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String()
}

// A wire is how a client reaches the server: a protocol over HTTP/1.1 or
// h2c.
type wire struct {
	name  string
	h2c   bool
	proto connect.ClientOption // nil for the Connect protocol
}

// wires are the ways every client test runs: each protocol, over each
// version of HTTP it runs on (gRPC needs HTTP/2).
var wires = []wire{
	{name: "connect/h1"},
	{name: "connect/h2c", h2c: true},
	{name: "grpcweb/h1", proto: connect.WithGRPCWeb()},
	{name: "grpcweb/h2c", h2c: true, proto: connect.WithGRPCWeb()},
	{name: "grpc/h2c", h2c: true, proto: connect.WithGRPC()},
}

// h2cWires are the wires that stream both ways at once.
func h2cWires() []wire {
	var ws []wire
	for _, w := range wires {
		if w.h2c {
			ws = append(ws, w)
		}
	}
	return ws
}

// httpClient returns a client of w's version of HTTP, whose idle
// connections close when the test ends.
func (w wire) httpClient(t testing.TB) *http.Client {
	var protocols http.Protocols
	if w.h2c {
		protocols.SetUnencryptedHTTP2(true)
	} else {
		protocols.SetHTTP1(true)
	}
	tr := &http.Transport{Protocols: &protocols}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// options returns connect's client options for w, then opts.
func (w wire) options(opts ...connect.ClientOption) []connect.ClientOption {
	if w.proto != nil {
		opts = append([]connect.ClientOption{w.proto}, opts...)
	}
	return opts
}

// clients are the test service's four procedures, through one set of
// client options.
type clients struct {
	call, list, collect, chat *connect.Client[msg, msg]
}

func newClients(t testing.TB, w wire, base string, opts ...connect.ClientOption) clients {
	hc := w.httpClient(t)
	o := w.options(opts...)
	return clients{
		call:    connect.NewClient[msg, msg](hc, base+callProcedure, o...),
		list:    connect.NewClient[msg, msg](hc, base+listProcedure, o...),
		collect: connect.NewClient[msg, msg](hc, base+collectProcedure, o...),
		chat:    connect.NewClient[msg, msg](hc, base+chatProcedure, o...),
	}
}

// unary makes a unary call with value v.
func (c clients) unary(ctx context.Context, v string) (string, error) {
	resp, err := c.call.CallUnary(ctx, connect.NewRequest(wrapperspb.String(v)))
	if err != nil {
		return "", err
	}
	return resp.Msg.GetValue(), nil
}

// listAll calls List with v and receives the whole stream.
func (c clients) listAll(ctx context.Context, v string) ([]string, error) {
	stream, err := c.list.CallServerStream(ctx, connect.NewRequest(wrapperspb.String(v)))
	if err != nil {
		return nil, err
	}
	defer stream.Close()
	var got []string
	for stream.Receive() {
		got = append(got, stream.Msg().GetValue())
	}
	return got, stream.Err()
}

// The helpers the transports' tests share, under the names these tests
// use.
type countingRegistry = transporttest.Registry

var (
	newRegistry       = transporttest.NewRegistry
	newManualDeadline = transporttest.NewManualDeadline
)

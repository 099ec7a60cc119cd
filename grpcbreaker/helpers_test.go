package grpcbreaker_test

import (
	"context"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/srebreaker/srebreaker"
	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/proba"
)

// The test service, test.Echo, is described by hand; its messages are
// wrapperspb.StringValue. A request's value says what the server does:
//
//	"code:N"  ends the call with status code N (after the messages of n:)
//	"n:K"     (List only) sends K messages first
//	"block"   tells arrived, then waits until the call's context is done
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
}

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
	switch v {
	case "block":
		s.arrived <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	case "panic":
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
	es := &echoServer{arrived: make(chan struct{}, 16)}
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

// newRegistry returns a registry whose breakers read a mock clock and a
// seeded random source, and count what is reported on their promises.
func newRegistry(opts ...breaker.Option) *countingRegistry {
	m := clock.NewMock()
	m.Set(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	return &countingRegistry{
		Registry: breaker.NewRegistry(append([]breaker.Option{
			breaker.WithClock(m), breaker.WithProba(proba.NewSeeded(1)),
		}, opts...)...),
		counts:   map[string]*counts{},
		reported: make(chan struct{}, 1<<16),
	}
}

// countingRegistry hands out the real breakers of a breaker.Registry,
// wrapped so that the outcomes reported on their promises are counted per
// key.
type countingRegistry struct {
	*breaker.Registry
	mu     sync.Mutex
	counts map[string]*counts // guarded by mu
	// reported gets a value after each outcome is reported, for tests in
	// which the client can see the answer before the server reports.
	reported chan struct{}
}

// counts are the outcomes reported for one key.
type counts struct {
	accepts, rejects, ignores atomic.Int64
	reported                  chan<- struct{}
}

func (c *counts) report(n *atomic.Int64) {
	n.Add(1)
	select {
	case c.reported <- struct{}{}:
	default:
	}
}

func (r *countingRegistry) countsFor(key string) *counts {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.counts[key]
	if !ok {
		c = &counts{reported: r.reported}
		r.counts[key] = c
	}
	return c
}

func (r *countingRegistry) Get(key string) breaker.Breaker {
	return countingBreaker{Breaker: r.Registry.Get(key), c: r.countsFor(key)}
}

type countingBreaker struct {
	breaker.Breaker
	c *counts
}

func (b countingBreaker) Allow() (srebreaker.Promise, error) {
	p, err := b.Breaker.Allow()
	if err != nil {
		return nil, err
	}
	return countingPromise{p: p, c: b.c}, nil
}

func (b countingBreaker) AllowCtx(ctx context.Context) (srebreaker.Promise, error) {
	p, err := b.Breaker.AllowCtx(ctx)
	if err != nil {
		return nil, err
	}
	return countingPromise{p: p, c: b.c}, nil
}

type countingPromise struct {
	p srebreaker.Promise
	c *counts
}

func (p countingPromise) Accept()              { p.p.Accept(); p.c.report(&p.c.accepts) }
func (p countingPromise) Reject(reason string) { p.p.Reject(reason); p.c.report(&p.c.rejects) }
func (p countingPromise) Ignore()              { srebreaker.Ignore(p.p); p.c.report(&p.c.ignores) }

// waitReported waits until an outcome is reported, for a test in which the
// report comes from another goroutine; it fails the test rather than hang.
func waitReported(t *testing.T, r *countingRegistry) {
	t.Helper()
	select {
	case <-r.reported:
	case <-time.After(10 * time.Second):
		t.Fatal("no outcome was reported")
	}
}

// outcomes returns what was reported for key: successes, failures and
// calls recorded as neither.
func outcomes(r *countingRegistry, key string) [3]int64 {
	c := r.countsFor(key)
	return [3]int64{c.accepts.Load(), c.rejects.Load(), c.ignores.Load()}
}

// manualDeadline is a context whose deadline passes when the test says so,
// without waiting for a clock.
type manualDeadline struct {
	context.Context
	done chan struct{}
	once sync.Once
}

func newManualDeadline() *manualDeadline {
	return &manualDeadline{Context: context.Background(), done: make(chan struct{})}
}

func (c *manualDeadline) expire()                     { c.once.Do(func() { close(c.done) }) }
func (c *manualDeadline) Done() <-chan struct{}       { return c.done }
func (c *manualDeadline) Deadline() (time.Time, bool) { return time.Time{}, false }
func (c *manualDeadline) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

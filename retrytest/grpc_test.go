package retrytest

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	grpcretry "github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/grpcbreaker"
	"github.com/srebreaker/srebreaker/proba"
	"github.com/srebreaker/srebreaker/retry"
)

// The dependency's one method, test.Dep/Call, is described by hand; its
// messages are wrapperspb.StringValue.
const depMethod = "/test.Dep/Call"

// grpcDependency serves test.Dep: it fails with Unavailable when the
// dependency fails the call, with a grpc-retry-pushback-ms trailer when
// pushback is set ("-1": don't retry).
type grpcDependency struct {
	*dependency
	pushback string
}

var depDesc = grpc.ServiceDesc{
	ServiceName: "test.Dep",
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{{MethodName: "Call", Handler: func(srv any, ctx context.Context, dec func(any) error,
		_ grpc.UnaryServerInterceptor) (any, error) {
		in := new(wrapperspb.StringValue)
		if err := dec(in); err != nil {
			return nil, err
		}
		d := srv.(*grpcDependency)
		if d.fails(grpcbreaker.AttemptOf(ctx)) {
			if d.pushback != "" {
				_ = grpc.SetTrailer(ctx, metadata.Pairs(grpcbreaker.PushbackTrailer, d.pushback))
			}
			return nil, status.Error(codes.Unavailable, "dependency failed")
		}
		return in, nil
	}}},
}

// serveGRPC runs d on 127.0.0.1 until the test ends and returns its
// address.
func serveGRPC(t *testing.T, d *grpcDependency) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer()
	srv.RegisterService(&depDesc, d)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	return ln.Addr().String()
}

// grpcCaller returns the dial options of a client, the breaker's
// interceptor given, and how it makes a call on cc.
type grpcCaller func(breakerInterceptor grpc.UnaryClientInterceptor, c *virtualClock) ([]grpc.DialOption,
	func(cc *grpc.ClientConn) error)

func invoke(ctx context.Context, cc *grpc.ClientConn) error {
	return cc.Invoke(ctx, depMethod, wrapperspb.String("hi"), new(wrapperspb.StringValue))
}

func plainGRPC(bi grpc.UnaryClientInterceptor, _ *virtualClock) ([]grpc.DialOption, func(*grpc.ClientConn) error) {
	return []grpc.DialOption{grpc.WithUnaryInterceptor(bi)},
		func(cc *grpc.ClientConn) error { return invoke(context.Background(), cc) }
}

func policyGRPC(bi grpc.UnaryClientInterceptor, c *virtualClock) ([]grpc.DialOption, func(*grpc.ClientConn) error) {
	p := retry.MustNew(retry.WithClock(c))
	return []grpc.DialOption{grpc.WithUnaryInterceptor(bi)}, func(cc *grpc.ClientConn) error {
		return p.Do(context.Background(), nil, func(ctx context.Context) error { return invoke(ctx, cc) })
	}
}

// middlewareGRPC retries with go-grpc-middleware's retry interceptor (3
// attempts, no backoff: virtual time), with the library's predicate when
// ours is set, its default codes otherwise.
func middlewareGRPC(ours bool) grpcCaller {
	return func(bi grpc.UnaryClientInterceptor, _ *virtualClock) ([]grpc.DialOption, func(*grpc.ClientConn) error) {
		opts := []grpcretry.CallOption{grpcretry.WithMax(3),
			grpcretry.WithBackoff(func(context.Context, uint) time.Duration { return 0 })}
		if ours {
			opts = append(opts, grpcretry.WithRetriable(grpcbreaker.Retriable))
		}
		return []grpc.DialOption{grpc.WithChainUnaryInterceptor(grpcretry.UnaryClientInterceptor(opts...), bi)},
			func(cc *grpc.ClientConn) error { return invoke(context.Background(), cc) }
	}
}

// nativeRetryConfig is gRPC's own retry policy: 4 attempts, Unavailable
// retried, the shortest backoff gRPC accepts.
const nativeRetryConfig = `{"methodConfig": [{"name": [{"service": "test.Dep"}], "retryPolicy": {
	"maxAttempts": 4, "initialBackoff": "0.000001s", "maxBackoff": "0.000001s", "backoffMultiplier": 1,
	"retryableStatusCodes": ["UNAVAILABLE"]}}]}`

// nativeThrottledConfig is nativeRetryConfig with gRPC's retryThrottling:
// a token bucket of 10, retries stop while it holds 5 or fewer, each
// success gives back 0.1 token and each failure takes 1.
const nativeThrottledConfig = `{"retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1},
	"methodConfig": [{"name": [{"service": "test.Dep"}], "retryPolicy": {
	"maxAttempts": 4, "initialBackoff": "0.000001s", "maxBackoff": "0.000001s", "backoffMultiplier": 1,
	"retryableStatusCodes": ["UNAVAILABLE"]}}]}`

// nativeGRPC retries with gRPC's own retry policy, config.
func nativeGRPC(config string) grpcCaller {
	return func(bi grpc.UnaryClientInterceptor, _ *virtualClock) ([]grpc.DialOption, func(*grpc.ClientConn) error) {
		return []grpc.DialOption{grpc.WithUnaryInterceptor(bi), grpc.WithDefaultServiceConfig(config)},
			func(cc *grpc.ClientConn) error { return invoke(context.Background(), cc) }
	}
}

// grpcScenario runs caller against a dependency that is down (or fails
// failShare of its calls when failShare > 0) for measured, after a
// healthy warm-up; the dependency's failures carry pushback.
func grpcScenario(t *testing.T, caller grpcCaller, failShare float64, measured time.Duration, pushback string) outcome {
	t.Helper()
	d := &grpcDependency{dependency: newDependency(0), pushback: pushback}
	addr := serveGRPC(t, d)
	c := newVirtualClock()
	reg := breaker.MustNewRegistry(breaker.WithClock(c), breaker.WithProba(proba.NewSeeded(1)))
	w := &dropWatch{}
	interceptors, err := grpcbreaker.NewClientInterceptors(grpcbreaker.WithRegistry(reg))
	require.NoError(t, err)
	bi := interceptors.Unary()
	watched := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn,
		invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		err := bi(ctx, method, req, reply, cc, invoker, opts...)
		w.saw(err)
		return err
	}
	opts, call := caller(watched, c)
	cc, err := grpc.NewClient("passthrough:///"+addr,
		append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cc.Close() })
	var o outcome
	run(c, warmUp, measured, func(measuring bool) {
		w.newCall(measuring)
		if measuring && !d.measuring.Load() {
			d.measuring.Store(true)
			d.failShare = failShare
			d.down.Store(failShare == 0)
		}
		err := call(cc)
		if !measuring {
			require.NoError(t, err, "the warm-up is healthy")
			return
		}
		o.calls++
		if err != nil {
			o.failed++
			if errors.Is(err, breaker.ErrServiceUnavailable) {
				o.dropped++
			}
		}
	})
	o.reached, o.firstFailures, o.dropsRetried = d.reached.Load(), d.firstFailures.Load(), w.afterDrop
	return o
}

// TestGRPC_outage_retriesDoNotFeedIt: the dependency is down for 20 s at
// 200 calls/s; retried with at most 3 attempts through the library or
// go-grpc-middleware with the library's predicate, or with gRPC's own
// retry policy against a server that answers "don't retry", it gets at
// most 1.1× the calls of a caller that never retries (1.11× asserted: see
// TestHTTP_outage_retriesDoNotFeedIt). The peers' defaults
// are the trap docs/guide/retries.md states.
func TestGRPC_outage_retriesDoNotFeedIt(t *testing.T) {
	base := grpcScenario(t, plainGRPC, 0, outage, "")
	t.Logf("gRPC, dependency down %v at %d calls/s: no retries: %d calls reached it (of %d made)",
		outage, rate, base.reached, base.calls)
	require.Positive(t, base.reached)
	for _, tc := range []struct {
		name     string
		caller   grpcCaller
		pushback string
		bound    float64 // the most reached/base; 0: a trap, only logged
	}{
		{"retry.Policy (3 attempts)", policyGRPC, "", 1.11},
		{"go-grpc-middleware, WithMax(3), grpcbreaker.Retriable", middlewareGRPC(true), "", 1.11},
		{"go-grpc-middleware, WithMax(3), its default codes", middlewareGRPC(false), "", 0},
		{"gRPC retryPolicy (maxAttempts 4), server answers grpc-retry-pushback-ms -1", nativeGRPC(nativeRetryConfig), "-1", 1.11},
		{"gRPC retryPolicy (maxAttempts 4), server without pushback", nativeGRPC(nativeRetryConfig), "", 0},
		{"gRPC retryPolicy (maxAttempts 4) and retryThrottling, server without pushback", nativeGRPC(nativeThrottledConfig), "", 1.11},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := grpcScenario(t, tc.caller, 0, outage, tc.pushback)
			ratio := float64(o.reached) / float64(base.reached)
			t.Logf("gRPC, %s: %d calls reached the dependency, %.2f× no retries; %d drops retried",
				tc.name, o.reached, ratio, o.dropsRetried)
			if tc.bound > 0 {
				assert.LessOrEqual(t, ratio, tc.bound)
				assert.Zero(t, o.dropsRetried, "a drop of the breaker is never retried")
			}
		})
	}
}

// TestGRPC_transientErrors_retriesSucceed: a healthy dependency fails 5%
// of its calls with Unavailable at random, at 200 calls/s; retried, at
// least 99% of the calls whose first attempt failed succeed, and the
// breaker drops none.
func TestGRPC_transientErrors_retriesSucceed(t *testing.T) {
	for _, tc := range []struct {
		name   string
		caller grpcCaller
	}{
		{"retry.Policy (3 attempts)", policyGRPC},
		{"go-grpc-middleware, WithMax(3), grpcbreaker.Retriable", middlewareGRPC(true)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := grpcScenario(t, tc.caller, 0.05, healthy, "")
			require.Positive(t, o.firstFailures)
			saved := 1 - float64(o.failed)/float64(o.firstFailures)
			t.Logf("gRPC, 5%% transient errors, %s: %d first attempts failed, %d calls failed in the end (%.2f%% saved by a retry), %d dropped",
				tc.name, o.firstFailures, o.failed, 100*saved, o.dropped)
			assert.GreaterOrEqual(t, saved, 0.99)
			assert.Zero(t, o.dropped)
		})
	}
}

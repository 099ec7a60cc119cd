package grpcbreaker_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/grpcbreaker"
)

func TestEndpoint(t *testing.T) {
	for _, tc := range []struct{ target, want string }{
		{"127.0.0.1:50051", "127.0.0.1:50051"},
		{"dns:///127.0.0.1:50051", "127.0.0.1:50051"},
		{"passthrough:///127.0.0.1:50051", "127.0.0.1:50051"},
		{"DNS:///127.0.0.1:50051", "127.0.0.1:50051"},
		{"dns:127.0.0.1:50051", "127.0.0.1:50051"},
		{"passthrough:127.0.0.1:50051", "127.0.0.1:50051"},
		{"dns://8.8.8.8:53/api.example.com:443", "api.example.com:443"},
		{"dns:/api.example.com", "api.example.com"},
		{"api.example.com:443", "api.example.com:443"},
		{"localhost:50051", "localhost:50051"},
		{"[::1]:50051", "[::1]:50051"},
		{"dns:///[::1]:50051", "[::1]:50051"},
		// Other schemes name their own endpoints: kept whole.
		{"unix:///run/app.sock", "unix:///run/app.sock"},
		{"unix:run/app.sock", "unix:run/app.sock"},
		{"xds:///payments", "xds:///payments"},
		{"dnsx:///127.0.0.1:50051", "dnsx:///127.0.0.1:50051"},
		// Nothing after the scheme: kept whole, never empty.
		{"dns:///", "dns:///"},
		{"dns://8.8.8.8", "dns://8.8.8.8"},
		{"passthrough:", "passthrough:"},
		{"", ""},
	} {
		assert.Equal(t, tc.want, grpcbreaker.Endpoint(tc.target), "%q", tc.target)
	}
	assert.Equal(t, 0.0, testing.AllocsPerRun(100, func() { _ = grpcbreaker.Endpoint("dns:///127.0.0.1:50051") }))
}

func TestDefaultKey(t *testing.T) {
	ctx := context.Background()
	assert.Equal(t, "127.0.0.1:50051/pkg.Service/Method", grpcbreaker.DefaultKey(ctx, "127.0.0.1:50051", "/pkg.Service/Method"))
	assert.Equal(t, "server:/pkg.Service/Method", grpcbreaker.DefaultKey(ctx, "", "/pkg.Service/Method"))
}

func TestClientInterceptors_targetFormsShareABreaker(t *testing.T) {
	es, addr := startServer(t)
	reg := breaker.MustNewRegistry()
	targets := []string{addr, "dns:///" + addr, "passthrough:///" + addr, "DNS:///" + addr, "dns:" + addr,
		"passthrough:" + addr, "dns://127.0.0.1:1/" + addr}
	for _, target := range targets {
		cc, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithUnaryInterceptor(grpcbreaker.UnaryClientInterceptor(grpcbreaker.WithRegistry(reg))))
		require.NoError(t, err, target)
		_, err = call(context.Background(), cc, "a")
		require.NoError(t, err, target)
		require.NoError(t, cc.Close())
	}
	var names []string
	reg.Range(func(name string, _ breaker.Breaker) bool {
		names = append(names, name)
		return true
	})
	assert.Equal(t, []string{addr + callMethod}, names)
	s := reg.Get(addr + callMethod).Stats()
	assert.Equal(t, int64(len(targets)), s.TotalSuccesses)
	assert.Equal(t, int64(len(targets)), es.received.Load())
}

func TestInterceptors_shareTheDefaultRegistryApart(t *testing.T) {
	_, addr := startServer(t, grpc.UnaryInterceptor(grpcbreaker.UnaryServerInterceptor()),
		grpc.StreamInterceptor(grpcbreaker.StreamServerInterceptor()))
	cc := dial(t, addr, grpc.WithUnaryInterceptor(grpcbreaker.UnaryClientInterceptor()),
		grpc.WithStreamInterceptor(grpcbreaker.StreamClientInterceptor()))

	def := breaker.DefaultRegistry()
	successes := func(key string) int64 {
		s := def.Get(key).Stats()
		return s.TotalSuccesses
	}
	// Deltas, since the registry lives as long as the process.
	client, server := addr+callMethod, "server:"+callMethod
	clientBefore, serverBefore := successes(client), successes(server)
	_, err := call(context.Background(), cc, "a")
	require.NoError(t, err)
	assert.Equal(t, clientBefore+1, successes(client), "the client's breaker, named by target and method")
	assert.Equal(t, serverBefore+1, successes(server), "the server's breaker, apart from the client's")
}

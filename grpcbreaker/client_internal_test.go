package grpcbreaker

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// gatedIgnorer is a promise whose Ignore tells entered, waits for
// release, and counts.
type gatedIgnorer struct {
	entered chan<- struct{}
	release <-chan struct{}
	ignored *atomic.Int64
}

func (gatedIgnorer) Accept()       {}
func (gatedIgnorer) Reject(string) {}

func (p gatedIgnorer) Ignore() {
	p.entered <- struct{}{}
	<-p.release
	p.ignored.Add(1)
}

// canceledStream is a stream its caller canceled.
type canceledStream struct{ grpc.ClientStream }

func (canceledStream) RecvMsg(any) error    { return status.Error(codes.Canceled, "context canceled") }
func (canceledStream) Trailer() metadata.MD { return nil }

// When the context's watch is recording a canceled stream as RecvMsg
// returns the cancel, RecvMsg waits for that record: once it returns, the
// outcome is recorded.
func TestClientStream_endWaitsForTheRecordUnderWay(t *testing.T) {
	o, err := newOptions(func(*options) bool { return true })
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	entered, release := make(chan struct{}), make(chan struct{})
	var ignored atomic.Int64
	s := &clientStream{ClientStream: canceledStream{}, o: o, ctx: ctx,
		call: streamCall{p: gatedIgnorer{entered: entered, release: release, ignored: &ignored}}}
	s.stop = context.AfterFunc(ctx, s.abandoned)
	cancel()
	<-entered // the watch is recording
	done := make(chan error, 1)
	go func() { done <- s.RecvMsg(nil) }()
	select {
	case <-done:
		t.Fatal("RecvMsg returned while the outcome was being recorded")
	case <-time.After(10 * time.Millisecond): // a window for the bug to show, not a wait the test needs
	}
	close(release)
	assert.Equal(t, codes.Canceled, status.Code(<-done))
	assert.Equal(t, int64(1), ignored.Load(), "recorded once")
}

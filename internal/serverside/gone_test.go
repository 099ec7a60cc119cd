package serverside_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/srebreaker/srebreaker/internal/serverside"
)

func TestGone(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancelExpired := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer cancelExpired()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		x    serverside.Outcome
		want serverside.Outcome
	}{
		{"failure, client gone", canceled, serverside.Failure, serverside.Ignore},
		{"success, client gone", canceled, serverside.Success, serverside.Success},
		{"failure, client there", context.Background(), serverside.Failure, serverside.Failure},
		{"failure, deadline passed", expired, serverside.Failure, serverside.Failure},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, serverside.Gone(tc.ctx, tc.x))
		})
	}
}

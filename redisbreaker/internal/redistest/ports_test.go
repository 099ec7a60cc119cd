package redistest

import (
	"context"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A cluster bus port another process took between its pick and the
// server's bind makes redis-server exit; startNew starts it again on
// other ports.
func TestStartNew_portTakenStartsOnOthers(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	_, takenPort, _ := net.SplitHostPort(taken.Addr().String())

	var tried [][]string
	s := startNew(t, 2, func(bus []string) []string {
		tried = append(tried, bus)
		if len(tried) == 1 {
			bus = []string{takenPort}
		}
		return []string{"--cluster-enabled", "yes", "--cluster-port", bus[0]}
	})
	require.Len(t, tried, 2, "one more attempt after the taken port")
	assert.NotEqual(t, takenPort, tried[1][0])
	require.NoError(t, s.Client().Ping(context.Background()).Err())
}

func TestServerStart_otherFailureIsNoPortTaken(t *testing.T) {
	s := &Server{t: t, addr: "127.0.0.1:1", dir: t.TempDir(), args: []string{"--no-such-option", "x"}}
	err := s.start()
	require.Error(t, err)
	assert.NotErrorIs(t, err, errPortTaken)
	assert.Contains(t, err.Error(), "exited before accepting connections")
}

func TestFreePorts_distinct(t *testing.T) {
	ports := freePorts(t, 12)
	seen := make(map[string]bool)
	for _, p := range ports {
		assert.False(t, seen[p], "port %s twice", p)
		seen[p] = true
	}
}

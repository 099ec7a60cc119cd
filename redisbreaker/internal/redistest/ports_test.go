package redistest

import (
	"context"
	"net"
	"strconv"
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

// Ports are picked below the ephemeral range, out of reach of outgoing
// connections, so that a stopped node's port is still free to start it
// again on.
func TestFreePorts_belowTheEphemeralRange(t *testing.T) {
	lo, hi := pickRange()
	if hi == 0 {
		t.Skip("no ephemeral range known here (not Linux)")
	}
	for _, p := range freePorts(t, 6) {
		n, err := strconv.Atoi(p)
		require.NoError(t, err)
		assert.True(t, n >= lo && n < hi, "port %d not in [%d, %d)", n, lo, hi)
	}
}

func TestListenBelow_emptyRange(t *testing.T) {
	assert.Nil(t, listenBelow(5, 5))
}

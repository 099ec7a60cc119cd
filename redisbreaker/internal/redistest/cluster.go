package redistest

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// NodeTimeout is the cluster-node-timeout of the nodes [StartCluster]
// starts: a master that answers no ping for this long is suspected, and a
// replica of it may be promoted soon after. Smaller makes failover quicker
// and spurious failovers on a loaded machine likelier.
const NodeTimeout = time.Second

// ClusterDeadline bounds each wait of a [Cluster]: for the cluster to form
// in [StartCluster], and for a failover in [Cluster.WaitFailover].
const ClusterDeadline = 30 * time.Second

// slots is the number of hash slots of a Redis Cluster.
const slots = 16384

// A Cluster is a Redis Cluster of redis-server processes a test started on
// loopback ports, without persistence. Its methods are for the test's
// goroutine; the client [Cluster.Client] returns may be used from any.
type Cluster struct {
	t      testing.TB
	nodes  []*Server        // in start order
	killed map[string]int64 // a slot each master stopped by KillMaster served, by address
}

// StartCluster starts masters×(1+replicasPerMaster) redis-server processes
// with cluster mode on, each on free ports of 127.0.0.1 (one for clients,
// one for the cluster bus), forms a cluster of them with
// redis-cli --cluster create, and waits until every node reports all 16384
// slots assigned and served, cluster_state:ok, and every replica's link to
// its master up. Everything is stopped when the test ends.
//
// A Redis Cluster needs at least 3 masters; replicasPerMaster may be 0. The
// nodes run with cluster-require-full-coverage off, so that the other
// masters go on serving their slots while one master is down, and with
// cluster-node-timeout [NodeTimeout]. make test installs redis-server and
// redis-cli (Debian's redis-server and redis-tools) when they are missing;
// without them the test fails rather than skips.
func StartCluster(t testing.TB, masters, replicasPerMaster int) *Cluster {
	t.Helper()
	require.GreaterOrEqual(t, masters, 3, "a Redis Cluster needs at least 3 masters")
	require.GreaterOrEqual(t, replicasPerMaster, 0)
	cli, err := exec.LookPath("redis-cli")
	require.NoError(t, err, "redis-cli not found: make test installs it (apt-get install redis-tools)")
	c := &Cluster{t: t, killed: make(map[string]int64)}
	addrs := make([]string, 0, masters*(1+replicasPerMaster))
	for range masters * (1 + replicasPerMaster) {
		s := startNew(t, 2, func(bus []string) []string {
			return []string{"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
				"--cluster-port", bus[0], "--cluster-node-timeout", strconv.FormatInt(NodeTimeout.Milliseconds(), 10),
				"--cluster-require-full-coverage", "no",
				// A replica's first sync starts at once rather than after 5 s.
				"--repl-diskless-sync-delay", "0"}
		})
		c.nodes = append(c.nodes, s)
		addrs = append(addrs, s.addr)
	}

	ctx, cancel := context.WithTimeout(context.Background(), ClusterDeadline)
	defer cancel()
	args := append(append([]string{"--cluster", "create"}, addrs...),
		"--cluster-replicas", strconv.Itoa(replicasPerMaster), "--cluster-yes")
	out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput()
	require.NoError(t, err, "redis-cli %s:\n%s", strings.Join(args, " "), out)

	c.waitFor(t, ctx, "the cluster to form", func(ctx context.Context, s *Server) error {
		if err := c.checkInfo(ctx, s); err != nil {
			return err
		}
		return replicaLinked(ctx, s)
	})
	return c
}

// Addrs returns the address of every node, masters and replicas, in the
// order they were started; nodes stopped by [Cluster.KillMaster] included.
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.nodes))
	for i, s := range c.nodes {
		addrs[i] = s.addr
	}
	return addrs
}

// Client returns a cluster client of all the nodes, closed when the test
// ends. It routes each command to the master of its key's slot, following
// MOVED and ASK up to 3 redirects, and each operation gives up after
// [Timeout] or the context's deadline, whichever comes first. The nodes
// announce 127.0.0.1, so everything stays on loopback.
//
// go-redis reloads its slot map on MOVED, ASK or READONLY, and once it is
// 10 s old, but not when a master refuses connections: after a failover,
// commands on the failed master's slots fail until then, unless the test
// calls [redis.ClusterClient.ReloadState] (which reloads in the
// background).
func (c *Cluster) Client() *redis.ClusterClient {
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), ContextTimeoutEnabled: true,
		DialTimeout: Timeout, ReadTimeout: Timeout, WriteTimeout: Timeout})
	c.t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// Masters returns the address of each master serving slots, as a running
// node sees it, in the order CLUSTER SLOTS lists them.
func (c *Cluster) Masters() []string {
	c.t.Helper()
	var masters []string
	for _, r := range c.slots() {
		if !slices.Contains(masters, r.Nodes[0].Addr) {
			masters = append(masters, r.Nodes[0].Addr)
		}
	}
	return masters
}

// MasterOf returns the address of the master serving key's slot, as a
// running node sees it: between a master's failure and its replica's
// promotion, the failed master.
func (c *Cluster) MasterOf(key string) (addr string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	slot, err := c.node(c.running()).control().ClusterKeySlot(ctx, key).Result()
	require.NoError(c.t, err, "CLUSTER KEYSLOT %s", key)
	return c.masterOfSlot(slot)
}

// masterOfSlot returns the address of the master serving slot, as a
// running node sees it.
func (c *Cluster) masterOfSlot(slot int64) string {
	c.t.Helper()
	for _, r := range c.slots() {
		if int64(r.Start) <= slot && slot <= int64(r.End) {
			return r.Nodes[0].Addr
		}
	}
	c.t.Fatalf("no node serves slot %d", slot)
	return ""
}

// ReplicasOf returns the address of each running replica of the master
// at addr, as the replicas report it (ROLE): those that may take over when
// it dies.
func (c *Cluster) ReplicasOf(addr string) []string {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	var replicas []string
	for _, s := range c.nodes {
		if !s.Running() {
			continue
		}
		role, err := s.control().Do(ctx, "ROLE").Slice()
		require.NoError(c.t, err, "ROLE of %s", s)
		if len(role) >= 3 && role[0] == "slave" && fmt.Sprintf("%v:%v", role[1], role[2]) == addr {
			replicas = append(replicas, s.addr)
		}
	}
	return replicas
}

// KillMaster kills the master at addr with SIGKILL, as a crash would, and
// waits for its process to exit. It fails the test if addr is no running
// master of the cluster serving slots. [Cluster.WaitFailover] waits for a replica to take
// over; [Cluster.Restart] starts the node again.
func (c *Cluster) KillMaster(addr string) {
	c.t.Helper()
	s := c.node(addr)
	require.True(c.t, s.Running(), "%s is not running", s)
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	role, err := s.control().Do(ctx, "ROLE").Slice()
	require.NoError(c.t, err, "ROLE of %s", s)
	require.Equal(c.t, "master", role[0], "%s is a replica", s)
	slot := int64(-1)
	for _, r := range c.slots() {
		if r.Nodes[0].Addr == addr {
			slot = int64(r.Start)
		}
	}
	require.NotEqual(c.t, int64(-1), slot, "%s serves no slot", s)
	c.killed[addr] = slot
	s.Stop()
}

// WaitFailover waits until the slots of the killed master at addr are
// served by another node (a replica promoted in its place) and every
// running node reports all 16384 slots served and cluster_state:ok again.
// It returns the address of the node that took over. It fails t if addr
// was not stopped by [Cluster.KillMaster], or if that takes longer than [ClusterDeadline], with what each node reported last.
// Writes the master acknowledged but had not yet passed to the replica are
// lost, as Redis replicates asynchronously; WAIT before the kill makes a
// write survive.
func (c *Cluster) WaitFailover(t testing.TB, addr string) (promoted string) {
	t.Helper()
	slot, ok := c.killed[addr]
	require.True(t, ok, "%s was not stopped by KillMaster", addr)
	ctx, cancel := context.WithTimeout(context.Background(), ClusterDeadline)
	defer cancel()
	c.waitFor(t, ctx, "a replica to take over from "+addr, func(ctx context.Context, s *Server) error {
		if err := c.checkInfo(ctx, s); err != nil {
			return err
		}
		ranges, err := s.control().ClusterSlots(ctx).Result()
		if err != nil {
			return err
		}
		for _, r := range ranges {
			if r.Nodes[0].Addr == addr {
				return fmt.Errorf("slots %d-%d still served by %s", r.Start, r.End, addr)
			}
		}
		return nil
	})
	return c.masterOfSlot(slot)
}

// Restart starts the node at addr again, on the same ports and with its
// cluster config file, after [Cluster.KillMaster] and
// [Cluster.WaitFailover]: it rejoins the cluster as a replica of the node
// that took over its slots. Restart returns once the node reports itself a
// replica with its link to its master up, and every running node reports
// all slots served and cluster_state:ok; it fails the test after
// [ClusterDeadline].
func (c *Cluster) Restart(addr string) {
	c.t.Helper()
	s := c.node(addr)
	s.Start()
	ctx, cancel := context.WithTimeout(context.Background(), ClusterDeadline)
	defer cancel()
	c.waitFor(c.t, ctx, addr+" to rejoin as a replica", func(ctx context.Context, n *Server) error {
		if err := c.checkInfo(ctx, n); err != nil {
			return err
		}
		if n != s {
			return nil
		}
		role, err := n.control().Do(ctx, "ROLE").Slice()
		if err != nil {
			return err
		}
		if role[0] != "slave" {
			return fmt.Errorf("ROLE says %v", role[0])
		}
		return replicaLinked(ctx, n)
	})
}

// node returns the node at addr, failing the test when there is none.
func (c *Cluster) node(addr string) *Server {
	c.t.Helper()
	for _, s := range c.nodes {
		if s.addr == addr {
			return s
		}
	}
	c.t.Fatalf("no node of the cluster listens on %s", addr)
	return nil
}

// running returns the address of a running node.
func (c *Cluster) running() string {
	c.t.Helper()
	for _, s := range c.nodes {
		if s.Running() {
			return s.addr
		}
	}
	c.t.Fatal("no node of the cluster runs")
	return ""
}

// slots returns CLUSTER SLOTS as a running node reports it.
func (c *Cluster) slots() []redis.ClusterSlot {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	ranges, err := c.node(c.running()).control().ClusterSlots(ctx).Result()
	require.NoError(c.t, err, "CLUSTER SLOTS")
	return ranges
}

// checkInfo returns an error unless CLUSTER INFO of s reports
// cluster_state:ok with every slot assigned and served.
func (c *Cluster) checkInfo(ctx context.Context, s *Server) error {
	info, err := s.control().ClusterInfo(ctx).Result()
	if err != nil {
		return err
	}
	for _, want := range []string{"cluster_state:ok", fmt.Sprint("cluster_slots_assigned:", slots), fmt.Sprint("cluster_slots_ok:", slots)} {
		if !strings.Contains(info, want+"\r\n") {
			return fmt.Errorf("CLUSTER INFO lacks %s:\n%s", want, info)
		}
	}
	return nil
}

// replicaLinked returns an error if s is a replica whose link to its
// master is not up: such a replica could not take over.
func replicaLinked(ctx context.Context, s *Server) error {
	info, err := s.control().Info(ctx, "replication").Result()
	if err != nil {
		return err
	}
	if strings.Contains(info, "role:slave") && !strings.Contains(info, "master_link_status:up") {
		return fmt.Errorf("replica's link to its master is not up:\n%s", info)
	}
	return nil
}

// waitFor polls every running node with check until each returns nil, or
// fails t when ctx ends, with the last error of each node.
func (c *Cluster) waitFor(t testing.TB, ctx context.Context, what string, check func(context.Context, *Server) error) {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		var errs []string
		for _, s := range c.nodes {
			if !s.Running() {
				continue
			}
			if err := check(ctx, s); err != nil {
				errs = append(errs, fmt.Sprintf("%s: %v", s, err))
			}
		}
		if len(errs) == 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("gave up waiting for %s after %s:\n%s", what, ClusterDeadline, strings.Join(errs, "\n"))
		case <-tick.C:
		}
	}
}

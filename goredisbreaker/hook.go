package goredisbreaker

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/srebreaker/srebreaker/internal/chain"
)

// ErrUnsupportedClient is wrapped by the error [Instrument] returns for a
// client it cannot instrument: nil, or a redis.UniversalClient other than
// go-redis's *redis.Client, *redis.ClusterClient and *redis.Ring.
var ErrUnsupportedClient = errors.New("goredisbreaker: unsupported client")

// Instrument puts a breaker in front of every Redis node client reaches:
// it adds a hook to the client, or to each node client of a Cluster or a
// Ring, that asks the node's breaker before each command and pipeline and
// reports how it went. Each node has its own breaker, named by [WithKey]'s
// function from the node's address and taken from [WithRegistry]'s
// registry, so that a Cluster sheds the commands of a sick shard alone.
//
// The clients:
//
//   - *redis.Client (redis.NewClient, and redis.NewFailoverClient for
//     Sentinel): one breaker, for its address;
//   - *redis.ClusterClient (redis.NewClusterClient, and
//     redis.NewFailoverClusterClient): a breaker per node, through
//     ClusterClient.OnNewNode. Node clients made before Instrument are not
//     guarded, so call it right after making the client, before its first
//     command;
//   - *redis.Ring: a breaker per shard, for the shards it has now (those
//     the ring counts as up) and those it adds later. The ring's heartbeat
//     PINGs go through the shards' hooks: a shard whose breaker sheds them
//     is soon voted down, and the ring moves its keys to the others.
//
// A dropped command is not sent: it fails, without a connection taken from
// the pool, with an error matching breaker.ErrServiceUnavailable (test it
// with errors.Is); a dropped pipeline sets that error on each of its
// commands. Instrument a client once: each call adds hooks of its own.
//
// Instrument returns an error wrapping [ErrInvalidOption] for an invalid
// option, or [ErrUnsupportedClient] for a client it cannot instrument, and
// then changes nothing.
func Instrument(client redis.UniversalClient, opts ...Option) error {
	o, err := newOptions(opts)
	if err != nil {
		return err
	}
	switch c := client.(type) {
	case *redis.Client:
		if c != nil {
			c.AddHook(o.hook(c))
			return nil
		}
	case *redis.ClusterClient:
		if c != nil {
			c.OnNewNode(func(node *redis.Client) { node.AddHook(o.hook(node)) })
			return nil
		}
	case *redis.Ring:
		if c != nil {
			// The shards made so far, listed before OnNewNode is asked for
			// those to come, so that no shard gets two hooks.
			var mu sync.Mutex
			var shards []*redis.Client
			_ = c.ForEachShard(context.Background(), func(_ context.Context, shard *redis.Client) error {
				mu.Lock()
				shards = append(shards, shard)
				mu.Unlock()
				return nil
			})
			c.OnNewNode(func(node *redis.Client) { node.AddHook(o.hook(node)) })
			for _, shard := range shards {
				shard.AddHook(o.hook(shard))
			}
			return nil
		}
	}
	return fmt.Errorf("%w: Instrument(%T): want a non-nil *redis.Client, *redis.ClusterClient or *redis.Ring",
		ErrUnsupportedClient, client)
}

// hook guards the commands and pipelines of one node client.
type hook struct {
	o   *options
	key string // the node's breaker's name in o.registry
}

// hook returns the hook for a node client.
func (o *options) hook(node *redis.Client) *hook {
	return &hook{o: o, key: o.key(node.Options().Addr)}
}

// DialHook leaves dials alone: a failed dial is the failure of the command
// that waited for the connection, which ProcessHook judges, and go-redis
// also dials in the background (MinIdleConns), for no caller.
func (h *hook) DialHook(next redis.DialHook) redis.DialHook {
	return next
}

// ProcessHook guards one command.
func (h *hook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if exempt(cmd.Args()) {
			return next(ctx, cmd)
		}
		b := h.o.keyed(h.key)
		p, err := b.AllowCtx(ctx)
		if err != nil {
			return err // go-redis sets it on cmd
		}
		away := chain.Leave(ctx) // see package chain
		defer away.Return()
		recorded := false
		defer func() {
			if !recorded {
				p.Reject(panicReason)
			}
		}()
		err = next(ctx, cmd)
		h.o.record(ctx, b, p, err)
		recorded = true
		return err
	}
}

// ProcessPipelineHook guards a pipeline, or a transaction, as one call:
// one breaker decision for all its commands, and one outcome. A pipeline
// that holds an exempt command passes by whole.
func (h *hook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			if exempt(cmd.Args()) {
				return next(ctx, cmds)
			}
		}
		b := h.o.keyed(h.key)
		p, err := b.AllowCtx(ctx)
		if err != nil {
			for _, cmd := range cmds {
				cmd.SetErr(err)
			}
			return err
		}
		away := chain.Leave(ctx) // see package chain
		defer away.Return()
		recorded := false
		defer func() {
			if !recorded {
				p.Reject(panicReason)
			}
		}()
		err = next(ctx, cmds)
		h.o.recordPipeline(ctx, b, p, err, cmds)
		recorded = true
		return err
	}
}

package goredisbreaker

import (
	"context"
	"errors"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/srebreaker/srebreaker"
	"github.com/srebreaker/srebreaker/internal/chain"
)

// exempt reports whether a command with these arguments passes the breaker
// by: neither dropped nor judged. These are the commands go-redis sends to
// set a connection up (a dropped HELLO would close the connection it was
// setting up, and its failure is already the failure of the command that
// waited for the connection), and the commands that block on the server
// for as long as the caller asks, whose time and end say nothing about the
// server's health. The list is the package documentation's. It does not
// allocate.
func exempt(args []any) bool {
	if len(args) == 0 {
		return false
	}
	name, ok := args[0].(string)
	var buf [10]byte // the longest name below
	if !ok || len(name) > len(buf) {
		return false
	}
	for i := range len(name) {
		c := name[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	switch string(buf[:len(name)]) {
	case "hello", "auth", "select", "readonly", "readwrite": // a connection's setup
		return true
	case "blpop", "brpop", "brpoplpush", "blmove", "blmpop", "bzpopmin", "bzpopmax", "bzmpop",
		"wait", "waitaof", "subscribe", "psubscribe", "ssubscribe", "monitor": // blocking
		return true
	case "client": // CLIENT SETNAME, SETINFO and MAINT_NOTIFICATIONS are setup; the rest is not
		if len(args) < 2 {
			return false
		}
		sub, ok := args[1].(string)
		return ok && (strings.EqualFold(sub, "setname") || strings.EqualFold(sub, "setinfo") ||
			strings.EqualFold(sub, "maint_notifications"))
	case "xread", "xreadgroup": // blocking with BLOCK, before STREAMS
		for _, a := range args[1:] {
			if s, ok := a.(string); ok {
				if strings.EqualFold(s, "block") {
					return true
				}
				if strings.EqualFold(s, "streams") {
					return false
				}
			}
		}
	}
	return false
}

// DefaultAcceptable is the default of [WithAcceptable]: it counts as a
// success a nil error, redis.Nil, and every error reply of the server
// except those that say it cannot serve now. Those, and every error that is
// not a reply (a refused or broken connection, a timeout, a full pool), are
// failures. The replies that count as failures are:
//
//   - LOADING: the server is loading its dataset;
//   - BUSY: a script or function runs past its time limit;
//   - MASTERDOWN, CLUSTERDOWN, TRYAGAIN: the replica lost its master, the
//     cluster is down, a slot is migrating;
//   - READONLY: a write reached a replica (a failover in progress);
//   - NOREPLICAS, MISCONF: the server refuses writes (too few replicas, a
//     failing snapshot);
//   - OOM: the server reached maxmemory;
//   - "ERR max number of clients reached".
//
// Other replies (WRONGTYPE, NOSCRIPT, a syntax error, MOVED and ASK
// redirections, a failed WATCH transaction) are answers of a healthy
// server to the command it was sent. A reply that a proxy such as KVRocks
// prefixes with "ERR " is read without it.
func DefaultAcceptable(err error) bool {
	if err == nil || errors.Is(err, redis.Nil) {
		return true
	}
	var reply redis.Error
	if !errors.As(err, &reply) {
		return false
	}
	return !unavailable(reply.Error())
}

// unavailableReplies start the error replies that say the server cannot
// serve now; see DefaultAcceptable.
var unavailableReplies = []string{
	"LOADING ", "BUSY ", "MASTERDOWN ", "CLUSTERDOWN ", "TRYAGAIN ", "READONLY ",
	"NOREPLICAS ", "MISCONF ", "OOM ", "max number of clients reached",
}

// unavailable reports whether an error reply says the server cannot serve.
func unavailable(msg string) bool {
	msg = strings.TrimPrefix(msg, "ERR ")
	for _, prefix := range unavailableReplies {
		if strings.HasPrefix(msg, prefix) {
			return true
		}
	}
	return false
}

// verdict is how a command's outcome counts.
type verdict int

const (
	success verdict = iota
	failure
	neither
)

// judge says how an admitted command that ended with err counts; ctx is the
// command's context.
func (o *options) judge(ctx context.Context, err error) verdict {
	switch {
	case err == nil, errors.Is(err, redis.Nil):
		return success
	case errors.Is(err, context.Canceled) || errors.Is(ctx.Err(), context.Canceled):
		return neither // the caller gave up: the server is not to blame
	case errors.Is(err, redis.ErrClosed):
		return neither // the program closed the client
	case o.acceptable(err):
		return success
	}
	return failure
}

// record reports on p how a command of breaker b that ended with err
// went. A failure is noted in the chain.Mark of ctx too, if it holds one
// (see package chain).
func (o *options) record(ctx context.Context, b chain.Namer, p srebreaker.Promise, err error) {
	switch o.judge(ctx, err) {
	case success:
		p.Accept()
	case neither:
		srebreaker.Ignore(p)
	default:
		p.Reject(err.Error())
		chain.Failed(ctx, b)
	}
}

// recordPipeline reports on p how a pipeline that ended with err went: a
// failure if err or the error of any of its commands is one. go-redis
// returns the first command's error, which may be a redis.Nil followed by
// a LOADING. b is the pipeline's breaker, as for record.
func (o *options) recordPipeline(ctx context.Context, b chain.Namer, p srebreaker.Promise, err error, cmds []redis.Cmder) {
	if err == nil {
		p.Accept()
		return
	}
	v := o.judge(ctx, err)
	if v == success {
		for _, cmd := range cmds {
			if cerr := cmd.Err(); cerr != nil && cerr != err && o.judge(ctx, cerr) == failure {
				err, v = cerr, failure
				break
			}
		}
	}
	switch v {
	case success:
		p.Accept()
	case neither:
		srebreaker.Ignore(p)
	default:
		p.Reject(err.Error())
		chain.Failed(ctx, b)
	}
}

// panicReason is the failure recorded for a command whose hooks below this
// one panicked or called runtime.Goexit; the panic goes on.
const panicReason = "go-redis command did not return (panic or runtime.Goexit)"

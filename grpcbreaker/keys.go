package grpcbreaker

import (
	"context"
	"sync"
	"sync/atomic"
)

// maxKeptKeys is how many keys a keyCache keeps at most: a client's
// targets and methods, a server's methods, are few; past that (methods
// clients name that no service registered, through
// grpc.UnknownServiceHandler), a key is made for each call.
const maxKeptKeys = 1024

// keyCache keeps the keys [DefaultKey] gives, so that a call looks its
// key up instead of joining two strings, an allocation a call. Lookups
// read an immutable map without a lock; a new key copies it.
type keyCache struct {
	keys atomic.Pointer[map[keyPair]string]
	mu   sync.Mutex // held to add a key
}

// keyPair is a call's target and full method.
type keyPair struct{ target, fullMethod string }

// of returns DefaultKey's key for target and fullMethod.
func (c *keyCache) of(target, fullMethod string) string {
	if m := c.keys.Load(); m != nil {
		if k, ok := (*m)[keyPair{target, fullMethod}]; ok {
			return k
		}
	}
	k := DefaultKey(context.Background(), target, fullMethod)
	c.mu.Lock()
	defer c.mu.Unlock()
	var old map[keyPair]string
	if m := c.keys.Load(); m != nil {
		old = *m
	}
	if kept, ok := old[keyPair{target, fullMethod}]; ok { // kept as this call waited
		return kept
	}
	if len(old) >= maxKeptKeys {
		return k
	}
	m := make(map[keyPair]string, len(old)+1)
	for p, v := range old {
		m[p] = v
	}
	m[keyPair{target, fullMethod}] = k
	c.keys.Store(&m)
	return k
}

// keyOf returns the key of a call to fullMethod of target ("" on a
// server): the options' key function's, or, for DefaultKey, the one
// kept.
func (o *options) keyOf(ctx context.Context, target, fullMethod string) string {
	if o.keys != nil {
		return o.keys.of(target, fullMethod)
	}
	return o.key(ctx, target, fullMethod)
}

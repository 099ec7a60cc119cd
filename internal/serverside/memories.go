package serverside

import (
	"sync"
	"sync/atomic"
)

// Memories holds an [Overload] per breaker key, so that the keys of one
// server (routes, methods) are judged apart: the first key's in a field of
// its own, the common case of one key; the others in a map, up to
// maxMemories of them, past which keys share one memory, so that keys
// clients choose cannot grow it without bound. The zero value is ready to
// use.
type Memories struct {
	first  atomic.Pointer[keyed]
	others sync.Map // key → *Overload
	n      atomic.Int64
	shared Overload
}

// keyed is the Overload of one key.
type keyed struct {
	key string
	o   Overload
}

// maxMemories is how many keys get an Overload of their own.
const maxMemories = 1024

// Of returns the Overload of key.
func (ms *Memories) Of(key string) *Overload {
	f := ms.first.Load()
	if f == nil {
		if ms.first.CompareAndSwap(nil, &keyed{key: key}) {
			return &ms.first.Load().o
		}
		f = ms.first.Load()
	}
	if f.key == key {
		return &f.o
	}
	if v, ok := ms.others.Load(key); ok {
		return v.(*Overload)
	}
	if ms.n.Load() >= maxMemories {
		return &ms.shared
	}
	v, loaded := ms.others.LoadOrStore(key, new(Overload))
	if !loaded {
		ms.n.Add(1)
	}
	return v.(*Overload)
}

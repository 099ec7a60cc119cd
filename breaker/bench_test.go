package breaker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/criticality"
	"github.com/srebreaker/srebreaker/override"
	"github.com/srebreaker/srebreaker/proba"
)

var sinkErr error

func BenchmarkBreaker_AllowAccept(b *testing.B) {
	br := breaker.MustNew()
	b.ReportAllocs()
	for range b.N {
		p, err := br.Allow()
		if err == nil {
			p.Accept()
		}
	}
}

func BenchmarkBreaker_AllowAcceptParallel(b *testing.B) {
	br := breaker.MustNew()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			p, err := br.Allow()
			if err == nil {
				p.Accept()
			}
		}
	})
}

func BenchmarkBreaker_Do(b *testing.B) {
	br := breaker.MustNew()
	ok := func() error { return nil }
	b.ReportAllocs()
	for range b.N {
		sinkErr = br.Do(ok)
	}
}

func BenchmarkBreaker_DoCtx(b *testing.B) {
	br := breaker.MustNew()
	ctx := context.Background()
	ok := func() error { return nil }
	b.ReportAllocs()
	for range b.N {
		sinkErr = br.DoCtx(ctx, ok)
	}
}

func BenchmarkBreaker_DoParallel(b *testing.B) {
	br := breaker.MustNew()
	ok := func() error { return nil }
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var err error
		for pb.Next() {
			err = br.Do(ok)
		}
		_ = err
	})
}

// shedding returns a breaker with K 1 and no protection, and opts, that
// many failures have driven to drop nearly every call, and starts b's
// timer afresh.
func shedding(b *testing.B, opts ...breaker.Option) breaker.Breaker {
	br := breaker.MustNew(append([]breaker.Option{breaker.WithK(1), breaker.WithProtection(0)}, opts...)...)
	for range 100_000 {
		if p, err := br.Allow(); err == nil {
			p.Reject("down")
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	return br
}

// BenchmarkBreaker_Drop measures a call the breaker drops: K 1 and no
// protection after many failures drop nearly every call.
func BenchmarkBreaker_Drop(b *testing.B) {
	br := shedding(b, breaker.WithProba(proba.New()))
	for range b.N {
		_, sinkErr = br.Allow()
	}
}

// BenchmarkBreaker_DropSystemRandom is BenchmarkBreaker_Drop drawing
// from the system's randomness, as a breaker without WithProba does.
func BenchmarkBreaker_DropSystemRandom(b *testing.B) {
	br := shedding(b)
	for range b.N {
		_, sinkErr = br.Allow()
	}
}

// BenchmarkBreaker_DropReadingBack is BenchmarkBreaker_Drop with a
// breaker that always reads back past its window (WithEvidence asks for
// more calls than it will ever hold): the cost of a decision on light
// traffic, reading back over every block it has filled (at most the 120
// of the default horizon).
func BenchmarkBreaker_DropReadingBack(b *testing.B) {
	br := shedding(b, breaker.WithProba(proba.New()),
		breaker.WithEvidence(1<<30, 0)) // 1<<30: an int on 32-bit platforms too
	for range b.N {
		_, sinkErr = br.Allow()
	}
}

func BenchmarkRegistry_Get(b *testing.B) {
	r := breaker.MustNewRegistry()
	r.Get("svc")
	b.ReportAllocs()
	for range b.N {
		_ = r.Get("svc")
	}
}

func BenchmarkRegistry_GetParallel(b *testing.B) {
	r := breaker.MustNewRegistry()
	r.Get("svc")
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_ = r.Get("svc")
		}
	})
}

// BenchmarkBreaker_AllowAcceptBuckets shows that a call's cost does not
// depend on how many buckets the window has.
func BenchmarkBreaker_AllowAcceptBuckets(b *testing.B) {
	for _, buckets := range []int{10, 40, 400} {
		b.Run(fmt.Sprintf("buckets=%d", buckets), func(b *testing.B) {
			br := breaker.MustNew(breaker.WithBuckets(buckets))
			b.ReportAllocs()
			for range b.N {
				p, err := br.Allow()
				if err == nil {
					p.Accept()
				}
			}
		})
	}
}

// BenchmarkBreaker_AllowAcceptSomeFailing is Allow + Accept on a breaker
// whose window holds a failure in a hundred calls, as a healthy
// dependency's often does: every call is decided by the formula, and
// finds nothing to drop.
func BenchmarkBreaker_AllowAcceptSomeFailing(b *testing.B) {
	br := breaker.MustNew()
	b.ReportAllocs()
	for i := range b.N {
		p, err := br.Allow()
		if err != nil {
			b.Fatal("dropped a call of a healthy dependency")
		}
		if i%100 == 0 {
			p.Reject("failed")
		} else {
			p.Accept()
		}
	}
}

func BenchmarkBreaker_AllowReject(b *testing.B) {
	br := breaker.MustNew(breaker.WithK(1e9)) // K this large never drops
	b.ReportAllocs()
	for range b.N {
		p, err := br.Allow()
		if err == nil {
			p.Reject("failed")
		}
	}
}

func BenchmarkBreaker_DropParallel(b *testing.B) {
	br := shedding(b)
	b.RunParallel(func(pb *testing.PB) {
		var err error
		for pb.Next() {
			_, err = br.Allow()
		}
		_ = err
	})
}

// BenchmarkBreaker_AllowCtxCriticality is Allow + Accept for a call whose
// context carries a criticality other than the default.
func BenchmarkBreaker_AllowCtxCriticality(b *testing.B) {
	br := breaker.MustNew()
	ctx := criticality.With(context.Background(), criticality.Sheddable)
	b.ReportAllocs()
	for range b.N {
		p, err := br.AllowCtx(ctx)
		if err == nil {
			p.Accept()
		}
	}
}

// BenchmarkBreaker_AllowCtxCriticalityUnderValue is
// BenchmarkBreaker_AllowCtxCriticality with the level under one more
// value, as a trace span or a request's ID would set after it: the level
// is then found by the context's Value.
func BenchmarkBreaker_AllowCtxCriticalityUnderValue(b *testing.B) {
	br := breaker.MustNew()
	type spanKey struct{}
	ctx := context.WithValue(criticality.With(context.Background(), criticality.Sheddable), spanKey{}, "span")
	b.ReportAllocs()
	for range b.N {
		p, err := br.AllowCtx(ctx)
		if err == nil {
			p.Accept()
		}
	}
}

func BenchmarkBreaker_AllowCtxCriticalityParallel(b *testing.B) {
	br := breaker.MustNew()
	ctx := criticality.With(context.Background(), criticality.Sheddable)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			p, err := br.AllowCtx(ctx)
			if err == nil {
				p.Accept()
			}
		}
	})
}

// BenchmarkBreaker_ForcedDrop measures a call dropped by a ShedAll
// override: a clock read and the error built when the override was set.
func BenchmarkBreaker_ForcedDrop(b *testing.B) {
	br := breaker.MustNew()
	if err := br.SetOverride(override.Spec{Mode: override.ShedAll, TTL: time.Hour}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		_, sinkErr = br.Allow()
	}
}

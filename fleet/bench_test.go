package fleet_test

import (
	"testing"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/fleet"
)

// BenchmarkMember_AllowAccept is Allow + Accept on a breaker that holds a
// fleet's history (Member.SetOthers), without failures or with 1 % of
// them, renewed every 65,536 calls, before it goes stale after a window.
func BenchmarkMember_AllowAccept(b *testing.B) {
	for _, tc := range []struct {
		name   string
		others fleet.Bucket
	}{
		{"failures=0", fleet.Bucket{Successes: 50}},
		{"failures=1%", fleet.Bucket{Successes: 99, Failures: 1}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			br := breaker.MustNew()
			f, _ := fleet.Of(br)
			buckets := make([]fleet.Bucket, 19)
			for i := range buckets {
				buckets[i] = tc.others
			}
			b.ReportAllocs()
			for i := range b.N {
				if i&0xffff == 0 {
					own := f.History()
					if err := f.SetOthers(fleet.History{Span: own.Span, Size: own.Size, Newest: own.Newest,
						Buckets: buckets}); err != nil {
						b.Fatal(err)
					}
				}
				p, err := br.Allow()
				if err == nil {
					p.Accept()
				}
			}
		})
	}
}

// BenchmarkHistory_UnmarshalBinary reads a history of a busy breaker: 19
// buckets and 32 blocks.
func BenchmarkHistory_UnmarshalBinary(b *testing.B) {
	h := fleet.History{Span: span, Size: 20, Newest: 17040672000, NewestBlock: 852033599}
	for range 19 {
		h.Buckets = append(h.Buckets, fleet.Bucket{Successes: 1000, Failures: 10, Drops: 5})
	}
	for range 32 {
		h.Blocks = append(h.Blocks, fleet.Bucket{Successes: 20000, Failures: 200, Drops: 100})
	}
	data, err := h.MarshalBinary()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for range b.N {
		var back fleet.History
		if err := back.UnmarshalBinary(data); err != nil {
			b.Fatal(err)
		}
	}
}

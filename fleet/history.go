package fleet

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// ErrInvalidHistory is wrapped by the errors of [History.UnmarshalBinary],
// [History.Merge] and [Member.SetOthers] for a history that cannot be
// used; the full text names what was wrong.
var ErrInvalidHistory = errors.New("fleet: invalid history")

// Bucket is what one bucket of time held: the calls admitted that
// finished, by outcome, and the calls dropped.
type Bucket struct {
	Successes, Failures, Drops int64
}

// History is what a process's breaker holds of one dependency, as a fleet
// shares it: its buckets, each the successes, failures and drops
// of one span of time, on a grid every process agrees on, so that
// histories add up bucket by bucket ([History.Merge]). Bucket number g
// spans [g·Span, (g+1)·Span) from the Unix epoch (1970-01-01 UTC).
//
// Buckets holds the newest buckets one by one, Blocks older ones a
// window's worth at a time, as far back as the breaker reads on light
// traffic: block number k holds buckets k·Size to k·Size+Size−1 (those of
// them that have left Buckets).
//
// The zero History holds nothing: it merges with any other as 0 adds.
// A History is a value; its methods do not change it, except
// UnmarshalBinary.
type History struct {
	// Span is a bucket's span: the breaker's window over its buckets.
	Span time.Duration
	// Size is how many buckets the breaker's window holds, the bucket
	// being filled included: a breaker publishes up to Size of them (its
	// window's finished buckets, then the live one), a merge up to 2·Size.
	Size int
	// Newest is the number of the newest bucket of Buckets, the last one.
	Newest int64
	// Buckets holds buckets, oldest first, up to Newest.
	Buckets []Bucket
	// NewestBlock is the number of the newest block of Blocks, the last
	// one.
	NewestBlock int64
	// Blocks holds older buckets by blocks of Size buckets, oldest first,
	// up to NewestBlock.
	Blocks []Bucket
}

// Limits of a History: what [History.UnmarshalBinary] accepts and what
// [History.Merge] returns.
const (
	// maxSize is the most buckets a breaker's window holds.
	maxSize = 1 << 16
	// maxBlocks bounds Blocks: above what reading back to the farthest
	// horizon (1,024 windows) holds.
	maxBlocks = 1 << 11
	// maxCount bounds each count: far beyond what a fleet's bucket
	// holds, and far enough below the largest int64 that sums of many
	// processes' counts cannot overflow.
	maxCount = 1 << 50
	// maxNumber bounds the numbers of buckets and blocks, so that no
	// arithmetic on them overflows.
	maxNumber = 1 << 62
)

// IsZero reports whether h is the zero History.
func (h History) IsZero() bool {
	return h.Span == 0 && h.Size == 0 && h.Newest == 0 && len(h.Buckets) == 0 &&
		h.NewestBlock == 0 && len(h.Blocks) == 0
}

// maxBuckets is how many buckets a History of window size holds one by
// one: two windows' worth, so that histories published a window apart
// still add up bucket by bucket.
func maxBuckets(size int) int { return 2 * size }

// check returns an error naming what makes h unusable.
func (h History) check() error {
	if h.IsZero() {
		return nil
	}
	switch {
	case h.Span <= 0:
		return fmt.Errorf("%w: span %v: must be positive", ErrInvalidHistory, h.Span)
	case h.Size < 1 || h.Size > maxSize:
		return fmt.Errorf("%w: size %d: must be between 1 and %d", ErrInvalidHistory, h.Size, maxSize)
	case len(h.Buckets) > maxBuckets(h.Size):
		return fmt.Errorf("%w: %d buckets: at most %d for a window of %d", ErrInvalidHistory, len(h.Buckets),
			maxBuckets(h.Size), h.Size)
	case len(h.Blocks) > maxBlocks:
		return fmt.Errorf("%w: %d blocks: at most %d", ErrInvalidHistory, len(h.Blocks), maxBlocks)
	case h.Newest < -maxNumber || h.Newest > maxNumber:
		return fmt.Errorf("%w: newest bucket %d: must be between -2^62 and 2^62", ErrInvalidHistory, h.Newest)
	case h.NewestBlock < -maxNumber || h.NewestBlock > maxNumber:
		return fmt.Errorf("%w: newest block %d: must be between -2^62 and 2^62", ErrInvalidHistory, h.NewestBlock)
	}
	for _, part := range []struct {
		name    string
		buckets []Bucket
	}{{"bucket", h.Buckets}, {"block", h.Blocks}} {
		for i, b := range part.buckets {
			for _, f := range []struct {
				name string
				v    int64
			}{{"successes", b.Successes}, {"failures", b.Failures}, {"drops", b.Drops}} {
				if f.v < 0 || f.v > maxCount {
					return fmt.Errorf("%w: %s %d %s %d: must be between 0 and %d", ErrInvalidHistory,
						part.name, i, f.name, f.v, int64(maxCount))
				}
			}
		}
	}
	return nil
}

// Merge returns the sum of h and o, bucket by bucket, aligned by bucket
// number, and block by block: what a fleet's processes hold together. It
// holds the newest 2·Size buckets one by one (older ones go to their
// blocks) and the newest 2,048 blocks. It returns an error wrapping
// [ErrInvalidHistory] when h and o are on different grids (Span or Size
// differ: processes configured with different windows) or when either
// is invalid; the zero History merges with any.
func (h History) Merge(o History) (History, error) {
	if err := h.check(); err != nil {
		return History{}, err
	}
	if err := o.check(); err != nil {
		return History{}, err
	}
	switch {
	case h.IsZero():
		return o.clone(), nil
	case o.IsZero():
		return h.clone(), nil
	case h.Span != o.Span || h.Size != o.Size:
		return History{}, fmt.Errorf("%w: buckets of %v, %d to a window, and of %v, %d to a window, do not add up",
			ErrInvalidHistory, h.Span, h.Size, o.Span, o.Size)
	}
	size := int64(h.Size)
	m := History{Span: h.Span, Size: h.Size, Newest: max(h.Newest, o.Newest)}
	first := max(min(h.first(), o.first()), m.Newest-int64(maxBuckets(h.Size))+1)
	m.Buckets = make([]Bucket, m.Newest-first+1)

	newestBlock, firstBlock, haveBlocks := blockRange(h, o, first, size)
	if haveBlocks {
		m.NewestBlock = newestBlock
		m.Blocks = make([]Bucket, newestBlock-firstBlock+1)
	}
	for _, x := range []History{h, o} {
		for i, b := range x.Buckets {
			g := x.first() + int64(i)
			if g >= first {
				m.Buckets[g-first] = m.Buckets[g-first].plus(b)
			} else {
				m.addBlock(floorDiv(g, size), b)
			}
		}
		for i, b := range x.Blocks {
			m.addBlock(x.firstBlock()+int64(i), b)
		}
	}
	return m, nil
}

// blockRange returns the newest and the oldest block of the merge of h
// and o whose buckets start at first, and whether it has blocks: the
// newest block of either, or of a bucket older than first, back at most
// maxBlocks.
func blockRange(h, o History, first, size int64) (newest, oldest int64, ok bool) {
	see := func(lo, hi int64) {
		if !ok {
			newest, oldest, ok = hi, lo, true
			return
		}
		newest, oldest = max(newest, hi), min(oldest, lo)
	}
	for _, x := range []History{h, o} {
		if len(x.Blocks) > 0 {
			see(x.firstBlock(), x.NewestBlock)
		}
		if len(x.Buckets) > 0 && x.first() < first {
			see(floorDiv(x.first(), size), floorDiv(min(x.Newest, first-1), size))
		}
	}
	return newest, max(oldest, newest-maxBlocks+1), ok
}

// first returns the number of h's oldest bucket.
func (h History) first() int64 { return h.Newest - int64(len(h.Buckets)) + 1 }

// firstBlock returns the number of h's oldest block.
func (h History) firstBlock() int64 { return h.NewestBlock - int64(len(h.Blocks)) + 1 }

// addBlock adds b to block k of h, if h's blocks reach it.
func (h *History) addBlock(k int64, b Bucket) {
	if i := k - h.firstBlock(); i >= 0 && i < int64(len(h.Blocks)) {
		h.Blocks[i] = h.Blocks[i].plus(b)
	}
}

// clone returns a copy of h that shares no memory with it.
func (h History) clone() History {
	c := h
	c.Buckets = append([]Bucket(nil), h.Buckets...)
	c.Blocks = append([]Bucket(nil), h.Blocks...)
	if len(h.Buckets) == 0 {
		c.Buckets = nil
	}
	if len(h.Blocks) == 0 {
		c.Blocks = nil
	}
	return c
}

func (b Bucket) plus(o Bucket) Bucket {
	return Bucket{b.Successes + o.Successes, b.Failures + o.Failures, b.Drops + o.Drops}
}

// floorDiv is a/n rounded down.
func floorDiv(a, n int64) int64 {
	q := a / n
	if a%n != 0 && a < 0 {
		q--
	}
	return q
}

// version is the first byte of a History's binary form.
const version = 1

// MarshalBinary returns h in its binary form, described in the package
// documentation. It returns an error wrapping [ErrInvalidHistory] when h
// is invalid (a count negative or above 2^50, a size out of range).
func (h History) MarshalBinary() ([]byte, error) {
	if err := h.check(); err != nil {
		return nil, err
	}
	out := make([]byte, 0, 16+4*(len(h.Buckets)+len(h.Blocks)))
	out = append(out, version)
	out = binary.AppendUvarint(out, uint64(h.Span))
	if h.IsZero() {
		return out, nil
	}
	out = binary.AppendUvarint(out, uint64(h.Size))
	out = binary.AppendVarint(out, h.Newest)
	out = appendBuckets(out, h.Buckets)
	out = binary.AppendVarint(out, h.NewestBlock)
	out = appendBuckets(out, h.Blocks)
	return out, nil
}

func appendBuckets(out []byte, buckets []Bucket) []byte {
	out = binary.AppendUvarint(out, uint64(len(buckets)))
	for _, b := range buckets {
		out = binary.AppendUvarint(out, uint64(b.Successes))
		out = binary.AppendUvarint(out, uint64(b.Failures))
		out = binary.AppendUvarint(out, uint64(b.Drops))
	}
	return out
}

// UnmarshalBinary sets h from its binary form (see the package
// documentation). It returns an error wrapping [ErrInvalidHistory], naming
// what was wrong and where, for data that is not a History of a version it
// reads; h is then unchanged.
func (h *History) UnmarshalBinary(data []byte) error {
	r := reader{data: data}
	if len(data) == 0 {
		return fmt.Errorf("%w: empty", ErrInvalidHistory)
	}
	if v := data[0]; v != version {
		return fmt.Errorf("%w: version %d: this code reads version %d", ErrInvalidHistory, v, version)
	}
	r.pos = 1
	var x History
	span := r.uvarint("span")
	if r.err == nil && span > uint64(1<<62) {
		r.fail("span", fmt.Sprintf("%d ns: too long", span))
	}
	x.Span = time.Duration(span)
	if r.err == nil && span == 0 {
		if r.pos != len(data) {
			return fmt.Errorf("%w: %d bytes after an empty history", ErrInvalidHistory, len(data)-r.pos)
		}
		*h = History{}
		return nil
	}
	size := r.uvarint("size")
	if r.err == nil && (size < 1 || size > maxSize) {
		r.fail("size", fmt.Sprintf("%d: must be between 1 and %d", size, maxSize))
	}
	x.Size = int(size)
	x.Newest = r.varint("newest bucket")
	x.Buckets = r.buckets("bucket", maxBuckets(x.Size))
	x.NewestBlock = r.varint("newest block")
	x.Blocks = r.buckets("block", maxBlocks)
	if r.err != nil {
		return r.err
	}
	if r.pos != len(data) {
		return fmt.Errorf("%w: %d bytes after the history", ErrInvalidHistory, len(data)-r.pos)
	}
	if err := x.check(); err != nil {
		return err
	}
	*h = x
	return nil
}

// reader reads varints, keeping the first error, which names the field.
type reader struct {
	data []byte
	pos  int
	err  error
}

func (r *reader) fail(field, what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s at byte %d: %s", ErrInvalidHistory, field, r.pos, what)
	}
}

func (r *reader) uvarint(field string) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.data[r.pos:])
	switch {
	case n == 0:
		r.fail(field, "truncated")
		return 0
	case n < 0:
		r.fail(field, "varint overflows 64 bits")
		return 0
	}
	r.pos += n
	return v
}

func (r *reader) varint(field string) int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.data[r.pos:])
	switch {
	case n == 0:
		r.fail(field, "truncated")
		return 0
	case n < 0:
		r.fail(field, "varint overflows 64 bits")
		return 0
	}
	r.pos += n
	return v
}

// buckets reads a count, at most limit, then that many buckets.
func (r *reader) buckets(name string, limit int) []Bucket {
	n := r.uvarint(name + " count")
	if r.err != nil {
		return nil
	}
	if n > uint64(limit) {
		r.fail(name+" count", fmt.Sprintf("%d: at most %d", n, limit))
		return nil
	}
	if n == 0 {
		return nil
	}
	// Each bucket takes 3 bytes at least: do not allocate for more than
	// the data can hold.
	if n > uint64(len(r.data)-r.pos)/3 {
		r.fail(name+" count", fmt.Sprintf("%d: more than the %d bytes left hold", n, len(r.data)-r.pos))
		return nil
	}
	out := make([]Bucket, n)
	for i := range out {
		for j, v := range []*int64{&out[i].Successes, &out[i].Failures, &out[i].Drops} {
			x, k := binary.Uvarint(r.data[r.pos:])
			field := func() string {
				return fmt.Sprintf("%s %d %s", name, i, [...]string{"successes", "failures", "drops"}[j])
			}
			switch {
			case k == 0:
				r.fail(field(), "truncated")
				return nil
			case k < 0:
				r.fail(field(), "varint overflows 64 bits")
				return nil
			case x > maxCount:
				r.fail(field(), fmt.Sprintf("%d: above %d", x, int64(maxCount)))
				return nil
			}
			r.pos += k
			*v = int64(x)
		}
	}
	return out
}

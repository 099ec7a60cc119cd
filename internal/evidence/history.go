package evidence

import "math"

// History keeps what the judge reads of a run of finished buckets: the
// newest window of them one by one, older ones in blocks of a window each
// back to the horizon, and the runs of agreeing buckets, folded in as each
// bucket finishes. Buckets are numbered from 0 in the order they finish;
// [History.Finish] takes them in that order.
//
// Its memory is made at the first bucket that held a call: a history that
// has seen none costs its header alone. A History is not safe for
// concurrent use: the breaker finishes buckets under its lock.
type History struct {
	size     int64 // buckets in the window, the live one included
	horizon  int64 // buckets back from the live one that reading back may reach
	evidence int64 // admitted calls reading back wants; 0 for none
	// k and protection are the formula's, for the runs' calm buckets.
	k, protection float64

	// ring holds the newest size−1 finished buckets: bucket n at
	// n mod (size−1). Nil until a bucket held a call.
	ring   []cell
	window Bucket // the sum over ring
	newest Bucket // the newest finished bucket
	next   int64  // the number of the next bucket to finish

	// blocks holds the buckets that left the ring, block n (buckets
	// n·size to n·size+size−1) at n mod len(blocks); newestBlock is the
	// newest block written. Nil without reading back.
	blocks      []cell
	newestBlock int64

	run run
}

// cell is a bucket as a History stores it: each count saturates at
// 2³²−1, far above what a bucket or a window of them holds.
type cell struct{ s, f, d uint32 }

func toCell(b Bucket) cell { return cell{sat32(b.Successes), sat32(b.Failures), sat32(b.Drops)} }

func (c cell) bucket() Bucket { return Bucket{int64(c.s), int64(c.f), int64(c.d)} }

func (c *cell) add(b Bucket) {
	c.s, c.f, c.d = sat32(int64(c.s)+b.Successes), sat32(int64(c.f)+b.Failures), sat32(int64(c.d)+b.Drops)
}

func sat32(n int64) uint32 { return uint32(min(max(n, 0), math.MaxUint32)) }

// NewHistory returns an empty history for the window and horizon of s.
func NewHistory(s Settings) *History {
	h := &History{}
	h.Reset(s)
	return h
}

// Reset empties h and sets it up for s.
func (h *History) Reset(s Settings) {
	size := int64(max(s.Buckets, 1))
	horizon := int64(0)
	if s.Evidence > 0 {
		horizon = max(int64(s.Horizon), 1) * size
	}
	ring, blocks := h.ring, h.blocks
	*h = History{size: size, horizon: horizon, evidence: s.Evidence, k: s.K, protection: s.Protection}
	if int64(len(ring)) == size-1 { // keep the memory, emptied
		clear(ring)
		h.ring = ring
		if blocks != nil && int64(len(blocks)) == h.blockCount() {
			clear(blocks)
			h.blocks = blocks
		}
	}
}

// blockCount is how many blocks reach back to the horizon.
func (h *History) blockCount() int64 {
	if h.horizon == 0 {
		return 0
	}
	return h.horizon/h.size + 2
}

// Next returns the number of the next bucket to finish.
func (h *History) Next() int64 { return h.next }

// Finish takes in finished bucket b and, after it, passed buckets that
// held nothing.
func (h *History) Finish(b Bucket, passed int64) {
	h.push(b)
	if passed <= 0 {
		return
	}
	// Past the ring and the blocks, more empty buckets change nothing
	// but the numbering and the runs.
	if flush := h.size + h.horizon + h.size; passed > flush {
		for range flush {
			h.push(Bucket{})
		}
		h.next += passed - flush
		h.newestBlock = h.next / h.size
		h.run.pass(passed-flush, h.size)
		return
	}
	for range passed {
		h.push(Bucket{})
	}
}

// calm reports whether the formula, over b's calls alone, sheds nothing.
func (h *History) calm(b Bucket) bool {
	return float64(b.Admitted())-h.protection-h.k*float64(b.Successes) <= 0
}

// push takes in one finished bucket.
func (h *History) push(b Bucket) {
	h.run.finish(b, h.size, h.calm(b))
	h.newest = b
	n := h.next
	h.next++
	if h.ring == nil {
		if b == (Bucket{}) {
			return // nothing to keep yet
		}
		h.ring = make([]cell, h.size-1)
		if k := h.blockCount(); k > 0 {
			h.blocks = make([]cell, k)
			h.newestBlock = n / h.size
		}
	}
	if len(h.ring) == 0 { // a window of one bucket: it leaves at once
		h.toBlock(n, b)
		return
	}
	slot := &h.ring[n%int64(len(h.ring))]
	if old := n - int64(len(h.ring)); old >= 0 {
		gone := slot.bucket()
		h.window = Bucket{h.window.Successes - gone.Successes, h.window.Failures - gone.Failures,
			h.window.Drops - gone.Drops}
		h.toBlock(old, gone)
	}
	*slot = toCell(b)
	h.window = h.window.Plus(slot.bucket())
}

// toBlock adds bucket n, leaving the ring, to its block.
func (h *History) toBlock(n int64, b Bucket) {
	if h.blocks == nil {
		return
	}
	num := n / h.size
	for h.newestBlock < num {
		h.newestBlock++
		h.blocks[h.newestBlock%int64(len(h.blocks))] = cell{}
	}
	if h.newestBlock-num >= int64(len(h.blocks)) {
		return // older than the blocks reach
	}
	h.blocks[num%int64(len(h.blocks))].add(b)
}

// Window returns the sum of the finished buckets still in the window.
func (h *History) Window() Bucket { return h.window }

// Buckets calls f with the finished buckets in the window, newest first,
// with their numbers, until f returns false.
func (h *History) Buckets(f func(n int64, b Bucket) bool) {
	for i := int64(1); i <= int64(len(h.ring)) && h.next-i >= 0; i++ {
		n := h.next - i
		if !f(n, h.ring[n%int64(len(h.ring))].bucket()) {
			return
		}
	}
}

// Blocks calls f with the blocks of older buckets, newest first, with
// their numbers (block n holds buckets n·size to n·size+size−1 that left
// the window), back to the horizon, until f returns false.
func (h *History) Blocks(f func(n int64, b Bucket) bool) {
	if h.blocks == nil {
		return
	}
	oldest := max(0, (h.next-h.horizon)/h.size)
	for num := h.newestBlock; num >= oldest && h.newestBlock-num < int64(len(h.blocks)); num-- {
		if !f(num, h.blocks[num%int64(len(h.blocks))].bucket()) {
			return
		}
	}
}

// Clone returns a copy of h that shares no memory with it.
func (h *History) Clone() History {
	c := *h
	if h.ring != nil {
		c.ring = append([]cell(nil), h.ring...)
	}
	if h.blocks != nil {
		c.blocks = append([]cell(nil), h.blocks...)
	}
	return c
}

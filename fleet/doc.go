// Package fleet links a breaker to the breakers of the same dependency in
// other processes. Processes share bucket histories, never the formula's
// intermediate values: each publishes its breaker's buckets
// ([Member.History]), something outside the breaker (the redisbreaker
// module, a simulation) merges the other processes' ([History.Merge]) and
// feeds them back ([Member.SetOthers]), and the breaker judges its own
// buckets and the fleet's with the one judge that judges a lone breaker,
// every refinement included: trust in the newest buckets, evidence read
// back on light traffic, counted drops; two rules are a fleet's own (see
// [Member]). A change of the formula never changes what a fleet shares.
//
// Histories add up bucket by bucket because every process numbers its
// buckets on one grid: bucket g spans [g·span, (g+1)·span) from the Unix
// epoch. A breaker's buckets start when it does; each is published as the
// bucket of the grid nearest to it, so that processes whose clocks agree
// add up buckets that are at most half a bucket apart.
//
// # Binary form
//
// [History.MarshalBinary] writes a history in a small, versioned form, for
// a store such as Redis. Integers are varints as encoding/binary writes
// them: unsigned (uvarint), or signed and zig-zag encoded (varint). In
// order:
//
//	byte 0     the version: 1
//	uvarint    Span, in nanoseconds; 0 for the zero History, and nothing follows
//	uvarint    Size: buckets in a window, the live one included (1 to 65,536)
//	varint     Newest: the number of the newest bucket on the grid
//	uvarint    n, the count of Buckets (at most 2·Size)
//	n × 3      uvarints: each bucket's successes, failures, drops, oldest first
//	varint     NewestBlock: the number of the newest block
//	uvarint    m, the count of Blocks (at most 2,048)
//	m × 3      uvarints: each block's successes, failures, drops, oldest first
//
// Each count is at most 2^50, and nothing follows the last block. A
// breaker of the defaults (a 2 s window of 20 buckets, evidence read back
// over 30 windows) publishes up to 20 buckets and 32 blocks, empty ones at
// either end left out: a few dozen bytes on light traffic; 286 for 19
// buckets of a thousand calls and 32 blocks of twenty thousand
// (BenchmarkHistory_UnmarshalBinary's). [History.UnmarshalBinary]
// reads version 1 and returns an error wrapping [ErrInvalidHistory],
// naming the field and the byte, for anything else: a version it does not
// know, a truncated or overlong varint, a count out of range, trailing
// bytes. A later version that adds fields takes a new version byte, and
// readers of version 1 reject it with an error rather than misread it.
//
// Everything in this package is safe for concurrent use by multiple
// goroutines; a [History] is a value.
package fleet

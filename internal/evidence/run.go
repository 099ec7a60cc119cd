package evidence

// run follows the newest finished buckets while they agree: the up run is
// the newest buckets that held successes and no failure, the down run the
// newest that held failures and no success. A bucket that held both ends
// both. Buckets without outcomes neither extend nor break a
// run's counts.
//
// downBuckets is how many buckets the down run spans, from its first
// failing bucket to its newest, with the buckets between them whatever
// they held (a dependency whose failing calls are few and far between, or
// shed, has been down all along).
//
// The recovery is the buckets since such a down run gave way: from the
// first bucket that held successes and that the formula, over that
// bucket's calls alone, sheds nothing (calm), to the newest, whatever they
// held but failures alone, while they span fewer buckets than the window
// has finished ones. rec holds their calls, but for the first bucket's
// drops, which were decided on the down run; recBuckets is how many
// buckets they span, 0 when there is no recovery. [Settings.Ratio] judges
// a recovery on its own calls: the down run's failures, still in the
// window, say nothing of the dependency since. Once it spans the window's
// finished buckets it is the window, and ends.
//
// A bucket is idle when it held no outcome and no drop: nobody called.
// Once a window's finished buckets are all idle (size−1 in a row), the
// window says nothing about the dependency any more, and every run ends. A
// bucket whose calls were all dropped is not idle: the breaker shed them on
// the runs' evidence, which it must not forget for that.
type run struct {
	up          int64
	down        int64
	downBuckets int64
	// quiet is how many of the newest buckets, in a row, held no outcome,
	// and idle how many held neither an outcome nor a drop.
	quiet, idle int64

	rec        Bucket
	recBuckets int64
}

// finish takes in one finished bucket, of a window of size buckets; calm
// reports whether the formula, over b's calls alone, sheds nothing.
func (r *run) finish(b Bucket, size int64, calm bool) {
	if b.Admitted() == 0 {
		if b.Drops == 0 {
			r.pass(1, size)
			return
		}
		r.quiet++
		r.idle = 0
		r.follow(b, size)
		return
	}
	begins := b.Successes > 0 && calm && r.downBuckets >= size // a recovery
	quiet := r.quiet
	r.quiet, r.idle = 0, 0
	switch {
	case b.Failures == 0:
		r.up += b.Successes
		r.down, r.downBuckets = 0, 0
	case b.Successes == 0:
		if r.down > 0 { // the run goes on: the quiet buckets are part of it
			r.downBuckets += quiet + 1
		} else {
			r.downBuckets = 1
		}
		r.down += b.Failures
		r.up = 0
		r.rec, r.recBuckets = Bucket{}, 0 // failures alone end a recovery
		return
	default:
		*r = run{rec: r.rec, recBuckets: r.recBuckets}
	}
	if begins {
		r.start(b, size)
		return
	}
	r.follow(b, size)
}

// start begins a recovery with bucket b. Its drops are left out: they
// were decided on the down run, before the dependency was seen to heal,
// and counted they would shed a healed dependency's few failures.
func (r *run) start(b Bucket, size int64) {
	r.rec, r.recBuckets = Bucket{}, 0
	b.Drops = 0
	r.extend(b, size)
}

// follow takes bucket b into the recovery, if there is one.
func (r *run) follow(b Bucket, size int64) {
	if r.recBuckets > 0 {
		r.extend(b, size)
	}
}

// extend adds b to the recovery, which ends once it spans the window's
// finished buckets.
func (r *run) extend(b Bucket, size int64) {
	r.rec = r.rec.Plus(b)
	r.recBuckets++
	if r.recBuckets >= size-1 {
		r.rec, r.recBuckets = Bucket{}, 0
	}
}

// pass takes in n idle buckets.
func (r *run) pass(n, size int64) {
	r.quiet += n
	r.idle += n
	if n > 0 && r.idle >= size-1 { // the window's finished buckets are all idle
		*r = run{quiet: r.quiet, idle: r.idle}
		return
	}
	if r.recBuckets > 0 {
		r.recBuckets += n
		if r.recBuckets >= size-1 {
			r.rec, r.recBuckets = Bucket{}, 0
		}
	}
}

// recent returns the successes and failures of the newest run and the live
// bucket, while the live bucket agrees with the run; (0, 0) when there is
// no run, or the live bucket breaks it.
// A run needs a finished bucket: a bucket that has just begun says too
// little on its own.
func (r *run) recent(live Bucket) (successes, failures int64) {
	if r.down > 0 && live.Successes == 0 {
		return 0, r.down + live.Failures
	}
	if r.up > 0 && live.Failures == 0 {
		return r.up + live.Successes, 0
	}
	return 0, 0
}

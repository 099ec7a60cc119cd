// Package breaker is a client-side circuit breaker that sheds load on its own
// when a dependency is failing: the adaptive throttling of the Google SRE
// book, chapter "Handling Overload"
// (https://sre.google/sre-book/handling-overload/), equation 21-1.
//
// A [Breaker] keeps, over a rolling window (2 s by default), how many calls
// it admitted (total) and how many of them succeeded (accepts). Before each
// call it drops the call with probability
//
//	max(0, (total − protection − K·accepts) / (total + 1))
//
// so a healthy dependency is never throttled, a failing one is shed in
// proportion to how badly it fails, and traffic flows back as it heals, with
// no open or half-open thresholds to tune. K (default 1.5) is how many calls
// the breaker lets through per success; protection (default 5) is how many
// failures in a quiet window it tolerates before dropping anything.
//
// Four refinements are on by default: the breaker trusts its newest buckets
// when they agree (only failures, shed now; only successes, admit now),
// counts its own drops in total as the SRE book does, at most K−1 per call
// admitted in the same bucket, drops with the probability above raised to
// the power 1/1.5, and on light traffic, when the window holds fewer than
// 40 calls, reads older calls too. Their settings were measured and are not
// options; [WithPlainFormula] turns all four off and judges by the formula
// exactly. docs/design/algorithm.md in the repository describes each, and
// docs/design/behaviour.md measures what each contributes.
//
// While the dependency is healthy, an admitted call costs one atomic load
// to decide and one atomic add to record: the live bucket's counters are
// kept without a lock, the clock is read on a fraction of calls, and the
// counters spread over processors when calls run in parallel (see
// docs/design/benchmarks.md in the repository).
//
// A call whose caller gave up (its context canceled, and the request
// failing with context.Canceled) counts as neither a success nor a
// failure: it says nothing about the dependency. A [Registry] keeps one
// breaker per name: those the program names itself for as long as the
// registry lives, and at most [DefaultLimit] of those the integrations
// make for names that come from outside (hosts, routes, methods), unless
// [Registry.SetLimit] says otherwise, so that such names cost bounded
// memory.
//
// A call that is still out long after the dependency's calls usually come
// back counts as a failure (see [WithSlowCall]). A call that answers
// before it ends (a stream, a response sent in parts) is marked answered
// with the Answered method of the breaker's promises, which an integration
// finds with a type assertion (see the example): it is then no longer
// out, and its outcome counts when it comes.
//
// Calls may carry a criticality in their context (package criticality): the
// breaker then places its drops from the lowest level up, SHEDDABLE first
// and CRITICAL_PLUS last, keeping the share of calls it drops, as the SRE
// book's chapter pairs adaptive throttling with criticality. Calls without
// one behave exactly as without criticality.
//
// During an incident an operator can take a breaker in hand for a limited
// time: [Breaker.SetOverride] with [override.ShedAll] drops every call (an
// error matching [ErrForced] says who set it and why), with
// [override.ShedNone] admits every call while still recording outcomes;
// the override ends on its own after its required TTL (at most a day), or
// with [Breaker.ClearOverride]. While no override is set, calls make no
// memory access for them. [Breaker.Stats], events and the exporters show
// the override in force (docs/guide/overrides.md).
//
// Everything one breaker does is a method of the [Breaker] a caller holds:
// go-zero's core/breaker method set, so that code written against a go-zero
// breaker moves over with a change of import path (go-zero's
// breaker.Do(name, req) is breaker.Get(name).Do(req), docs/guide/gozero.md), and
// Stats, SetOverride, ClearOverride and Override besides. A nil req given
// to a Do method panics, naming the method, before anything is recorded:
// misuse is the caller's error, never the dependency's. A nil fallback
// means none and a nil acceptable means [srebreaker.DefaultAcceptable], as
// go-zero's code passes them.
//
// Breakers, promises and registries are safe for concurrent use by multiple
// goroutines.
package breaker

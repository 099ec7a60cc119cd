// Package statuspage serves a live page of a registry's breakers: for each,
// its name, its drop probability, what its window holds (requests,
// successes, failures, drops), its newest failure reasons, its figures by
// criticality level when calls name levels, the operator's override in
// force on it, if any (see [breaker.Breaker.SetOverride]: its mode,
// reason, author and end), the overload limit of a server guarded under
// its name, if any (see [breaker.OverloadStats]: the limit, the calls in
// flight and queued, whether the server is overloaded or its queue held
// short, and its rejections by level), and a chart of its drop
// probability over the last minute. The page refreshes itself about once a
// second from the same data as JSON, which scripts can read too (the same
// URL with ?format=json).
//
// Like net/http/pprof's handlers, a [Page] is an http.Handler mounted where
// the caller chooses, and nowhere else: the package registers nothing on
// http.DefaultServeMux. Breaker names and failure reasons often come from
// outside (hosts, routes, error messages), so mount the page only on a
// listener that those allowed to see them reach, such as an admin port on
// loopback:
//
//	mux := http.NewServeMux()
//	mux.Handle("/debug/breakers", statuspage.MustNew(breaker.DefaultRegistry()))
//
// The page is one self-contained document: its script and style are inline,
// it loads nothing from anywhere else, and its Content-Security-Policy lets
// it run only its own script and fetch only from its own origin. Names and
// reasons reach the page as JSON and are written into it as text, never as
// markup.
//
// The chart's history is sampled when the page or its JSON is requested, at
// most one sample per breaker per second, and kept for a minute: nothing
// runs in the background, and a page nobody watches costs nothing. Memory
// is bounded: at most [WithLimit] breakers are shown (those holding an
// override, then those with the highest drop probability, when the
// registry holds more), each with at most a minute of samples.
//
// The page is read-only: it answers GET and HEAD alone, and offers no way
// to set or clear an override, or to change anything else.
//
// A Page is safe for concurrent use by multiple goroutines.
package statuspage

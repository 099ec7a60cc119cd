package statuspage

import "time"

const (
	// historySpan is how far back the charts reach.
	historySpan = time.Minute
	// sampleInterval is the finest step of a history: requests within the
	// same interval of the clock update one sample.
	sampleInterval = time.Second
	// historyLen holds a sample per interval of the span, and the current
	// one.
	historyLen = int(historySpan/sampleInterval) + 1
)

// history is a ring of the newest samples of a breaker's drop probability,
// oldest first from start: at most one per sampleInterval of the clock, so
// however often the page is requested, a history holds at most historyLen
// samples, about 2 KiB. Callers hold Page.mu.
type history struct {
	samples [historyLen]Sample
	start   int // index of the oldest sample
	n       int // samples held
}

// add records p at t. A sample within the same interval as the newest
// updates it; a t before the newest (the clock was set back) starts the
// history anew.
func (h *history) add(t time.Time, p float64) {
	if h.n > 0 {
		last := &h.samples[(h.start+h.n-1)%historyLen]
		switch {
		case t.Before(last.At):
			h.n = 0
		case t.Truncate(sampleInterval).Equal(last.At.Truncate(sampleInterval)):
			*last = Sample{At: t, DropProbability: p}
			return
		}
	}
	if h.n == historyLen {
		h.start = (h.start + 1) % historyLen
		h.n--
	}
	h.samples[(h.start+h.n)%historyLen] = Sample{At: t, DropProbability: p}
	h.n++
}

// since returns a copy of the samples after from, oldest first.
func (h *history) since(from time.Time) []Sample {
	out := make([]Sample, 0, h.n)
	for i := 0; i < h.n; i++ {
		if s := h.samples[(h.start+i)%historyLen]; s.At.After(from) {
			out = append(out, s)
		}
	}
	return out
}

package evidence

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func defaults() Settings {
	return Settings{K: 1.5, Protection: 5, Aggression: 1.5, CountDrops: true, TrustRecent: true,
		Evidence: 40, Buckets: 20, Horizon: 30}
}

func TestHistory_Merged_debug(t *testing.T) {
	s := defaults()
	h := NewHistory(s)
	h.Finish(Bucket{}, 0)             // bucket 0
	h.Finish(Bucket{Failures: 1}, 18) // buckets 1..19
	others := Shared{Span: 1, Size: 20, Newest: 0, Buckets: []Bucket{{Failures: 100}}}
	sum := h.Merged(&others, 0)
	t.Logf("%+v", sum)
	num, den := s.Ratio(&sum, Bucket{})
	t.Logf("%v %v", num, den)
	assert.Greater(t, num, 0.0)
}

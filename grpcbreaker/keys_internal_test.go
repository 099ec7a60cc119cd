package grpcbreaker

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestKeyCache_givesDefaultKeysKeys(t *testing.T) {
	var c keyCache
	for _, tc := range []struct{ target, method string }{
		{"", "/pkg.Service/Method"}, {"127.0.0.1:50051", "/pkg.Service/Method"}, {"", "/pkg.Service/Other"},
	} {
		want := DefaultKey(context.Background(), tc.target, tc.method)
		assert.Equal(t, want, c.of(tc.target, tc.method), "made")
		assert.Equal(t, want, c.of(tc.target, tc.method), "kept")
	}
	assert.Len(t, *c.keys.Load(), 3)
}

func TestKeyCache_keptKeyAllocatesNothing(t *testing.T) {
	var c keyCache
	method := strings.Clone("/pkg.Service/Method") // not a constant: as the wire gives it
	c.of("", method)
	allocs := testing.AllocsPerRun(100, func() { _ = c.of("", method) })
	assert.Equal(t, 0.0, allocs)
}

// Past maxKeptKeys, methods that clients name (no service registered
// them) are keyed all the same, each call, and the cache grows no more.
func TestKeyCache_boundedByMaxKeptKeys(t *testing.T) {
	var c keyCache
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range maxKeptKeys {
				m := fmt.Sprintf("/pkg.S%d/M%d", g, i)
				assert.Equal(t, serverPrefix+m, c.of("", m))
			}
		}()
	}
	wg.Wait()
	assert.Len(t, *c.keys.Load(), maxKeptKeys)
	assert.Equal(t, "server:/pkg.New/Method", c.of("", "/pkg.New/Method"))
	assert.Len(t, *c.keys.Load(), maxKeptKeys)
}

func TestOptions_keyOf(t *testing.T) {
	o, err := newOptions(func(*options) bool { return true })
	assert.NoError(t, err)
	assert.NotNil(t, o.keys, "DefaultKey's keys are kept")
	assert.Equal(t, "server:/pkg.Service/Method", o.keyOf(context.Background(), "", "/pkg.Service/Method"))

	own := func(_ context.Context, target, method string) string { return "own:" + target + method }
	o, err = newOptions(func(o *options) bool { WithKey(own)(o); return true })
	assert.NoError(t, err)
	assert.Nil(t, o.keys, "a key function of the user's is asked each call")
	assert.Equal(t, "own:/pkg.Service/Method", o.keyOf(context.Background(), "", "/pkg.Service/Method"))
}

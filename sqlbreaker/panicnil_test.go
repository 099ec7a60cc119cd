package sqlbreaker_test

import (
	"context"
	"database/sql/driver"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/srebreaker/srebreaker/internal/panicnil"
)

// With GODEBUG panicnil=1, recover returns nil for panic(nil) as for
// runtime.Goexit: the wrapper must raise it again rather than return nil,
// nil to database/sql.
func TestWrap_panicNilWithPanicnil1(t *testing.T) {
	const name = "TestWrap_panicNilWithPanicnil1"
	if !panicnil.InChild(t, name) {
		return
	}
	s := &fakeServer{}
	db, b := newDB(t, s)
	s.setHook(func(_ context.Context, op string) error {
		if op == "query" {
			panic(nil)
		}
		return nil
	})
	panicked, _ := panicnil.Panics(func() {
		rawConn(t, db, func(dc any) { _, _ = dc.(driver.QueryerContext).QueryContext(context.Background(), "q", nil) })
	})
	assert.True(t, panicked, "panic(nil) is raised again")
	assert.Equal(t, []string{"accept", // the connect
		"reject: call exited without returning (runtime.Goexit, or panic(nil) with GODEBUG panicnil=1)"}, b.take())
}

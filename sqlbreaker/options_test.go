package sqlbreaker_test

// must returns v, and panics with err when a constructor whose options a
// test wrote returned one.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

package statuspage_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/override"
	"github.com/srebreaker/srebreaker/statuspage"
)

func TestPage_ServeHTTP_override(t *testing.T) {
	m, r := fixture(t)
	calls(t, r.Get("payments"), 10, 0, "")
	require.NoError(t, r.Get("payments").SetOverride(override.Spec{Mode: override.ShedAll,
		TTL: 10 * time.Minute, Reason: `<script>alert("reason")</script>`, By: "alice"}))
	_, err := r.Get("payments").Allow()
	require.ErrorIs(t, err, breaker.ErrForced)
	r.Get("search")
	page := statuspage.MustNew(r, statuspage.WithClock(m))

	s := snapshot(t, page)
	require.Len(t, s.Breakers, 2)
	pay, search := s.Breakers[0], s.Breakers[1]
	require.NotNil(t, pay.Override)
	assert.Equal(t, statuspage.Override{Mode: "shed_all", Reason: `<script>alert("reason")</script>`, By: "alice",
		SetAt: start, Expires: start.Add(10 * time.Minute), Drops: 1},
		statuspage.Override{Mode: pay.Override.Mode, Reason: pay.Override.Reason, By: pay.Override.By,
			SetAt: pay.Override.SetAt.UTC(), Expires: pay.Override.Expires.UTC(), Drops: pay.Override.Drops})
	assert.Nil(t, search.Override)
	_, body := get(t, page, "/?format=json")
	assert.Equal(t, 1, strings.Count(body, `"override":`), "left out of the JSON without one")

	_, html := get(t, page, "/")
	assert.Equal(t, 2, strings.Count(html, "<script"), "the reason is data, never markup")

	m.Add(10 * time.Minute)
	s = snapshot(t, page)
	assert.Nil(t, s.Breakers[0].Override, "gone once it expired")
}

// The page shows an override and offers no way to change it: methods that
// would change something are refused, and the page holds no form.
func TestPage_ServeHTTP_overrideReadOnly(t *testing.T) {
	m, r := fixture(t)
	require.NoError(t, r.Get("payments").SetOverride(override.Spec{Mode: override.ShedNone,
		TTL: time.Minute}))
	page := statuspage.MustNew(r, statuspage.WithClock(m))
	srv := httptest.NewServer(page) // listens on 127.0.0.1
	defer srv.Close()
	for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch} {
		resp, _ := do(t, srv.Client(), method, srv.URL+"/?mode=shed_all")
		assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode, method)
	}
	_, html := do(t, srv.Client(), http.MethodGet, srv.URL+"/?clear=1")
	for _, s := range []string{"<form", "<button", "<input", "method:", "'POST'", "'DELETE'"} {
		assert.NotContains(t, html, s)
	}
	o, ok := r.Get("payments").Override()
	require.True(t, ok, "still in force")
	assert.Equal(t, override.ShedNone, o.Mode)
}

func TestPage_ServeHTTP_limitKeepsOverridden(t *testing.T) {
	m, r := fixture(t)
	for _, name := range []string{"a", "b", "c", "d"} {
		calls(t, r.Get(name), 20, 0, "")
	}
	calls(t, r.Get("b"), 0, 20, "down")
	require.NoError(t, r.Get("d").SetOverride(override.Spec{Mode: override.ShedNone, TTL: time.Minute}))
	s := snapshot(t, statuspage.MustNew(r, statuspage.WithClock(m), statuspage.WithLimit(2)))
	var names []string
	for _, b := range s.Breakers {
		names = append(names, b.Name)
	}
	assert.Equal(t, []string{"b", "d"}, names, "the overridden one first, then the worst")
}

package main

import (
	"math"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/srebreaker/srebreaker/httpbreaker"
)

func TestCheck(t *testing.T) {
	ok := "http://127.0.0.1:8080/checkout"
	if err := check(ok, 1000, time.Second, time.Second, 0.3); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"elsewhere":       check("http://example.com/", 1000, time.Second, time.Second, 0.3),
		"no url":          check("", 1000, time.Second, time.Second, 0.3),
		"rate NaN":        check(ok, math.NaN(), time.Second, time.Second, 0.3),
		"rate 0":          check(ok, 0, time.Second, time.Second, 0.3),
		"for 0":           check(ok, 1000, 0, time.Second, 0.3),
		"timeout 0":       check(ok, 1000, time.Second, 0, 0.3),
		"sheddable above": check(ok, 1000, time.Second, time.Second, 1.5),
	} {
		if err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// send sends about the rate asked for, marks SHEDDABLE the share asked
// for, and counts the answers by status.
func TestSend(t *testing.T) {
	var shed, total atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		total.Add(1)
		if r.Header.Get(httpbreaker.CriticalityHeader) == "SHEDDABLE" {
			shed.Add(1)
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	counts := send(srv.URL, 200, 500*time.Millisecond, time.Second, 0.5, 1)
	n, s := int(total.Load()), int(shed.Load())
	if n < 98 || n > 101 {
		t.Errorf("%d requests sent at 200 a second for half a second", n)
	}
	if counts["200"] != n-s || counts["503"] != s || len(counts) != 2 {
		t.Errorf("counts %v, want %d 200s and %d 503s", counts, n-s, s)
	}
	if share := float64(s) / float64(n); share < 0.3 || share > 0.7 {
		t.Errorf("%.2f marked SHEDDABLE, want about 0.5", share)
	}
}

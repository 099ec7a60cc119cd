package httpbreaker_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/httpbreaker"
)

// waitFor waits until ok holds, reading reg's reports, and fails the test
// rather than hang.
func waitFor(t *testing.T, reg *countingRegistry, ok func() bool, what string) {
	t.Helper()
	for !ok() {
		select {
		case <-reg.Reported():
		case <-time.After(10 * time.Second):
			t.Fatal("waiting for " + what)
		}
	}
}

// A handler that streams (a Flush) or takes the connection over (a
// Hijack), stays open for minutes, then ends, is recorded, once, as its
// status or its panic says, or as neither when its client went away;
// while it was open, it did not count against the server as a call out,
// though the breaker had learned that the handler's calls come back within
// a bucket.
func TestHandler_ServeHTTP_endAfterAnswer(t *testing.T) {
	var (
		success = [3]int64{1, 0, 0}
		failure = [3]int64{0, 1, 0}
		neither = [3]int64{0, 0, 1}
	)
	for _, tc := range []struct {
		name   string
		hijack bool
		status int    // written before the first Flush; 0 for none
		end    string // what the handler does at the end: return, panic, abort, or, for leave, waits for its client to go
		want   [3]int64
	}{
		{"flush, returns", false, 0, "return", success},
		{"flush, 500 then returns", false, http.StatusInternalServerError, "return", failure},
		{"flush, 429 then returns", false, http.StatusTooManyRequests, "return", success},
		{"flush, panics", false, 0, "panic", failure},
		{"flush, aborts", false, 0, "abort", failure},
		{"flush, its client leaves", false, 0, "leave", neither},
		{"hijack, returns", true, 0, "return", success},
		{"hijack, panics", true, 0, "panic", failure},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mock := clock.NewMock()
			mock.Set(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
			reg := newRegistry(breaker.WithClock(mock))
			release := make(chan struct{})
			arrived := make(chan struct{}, 1)
			h := httpbreaker.MustNewHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/stream" {
					return
				}
				if tc.hijack {
					conn, rw, err := w.(http.Hijacker).Hijack()
					if err != nil {
						panic(err)
					}
					defer conn.Close()
					_, _ = rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: test\r\nConnection: Upgrade\r\n\r\nevent\n")
					_ = rw.Flush()
				} else {
					if tc.status != 0 {
						w.WriteHeader(tc.status)
					}
					_, _ = io.WriteString(w, "event\n")
					w.(http.Flusher).Flush()
				}
				arrived <- struct{}{}
				if tc.end == "leave" {
					<-r.Context().Done()
					return
				}
				<-release
				switch tc.end {
				case "panic":
					panic("stream bug")
				case "abort":
					panic(http.ErrAbortHandler)
				}
			}), httpbreaker.WithBreakers(reg.Get))
			panics := make(chan any, 1)
			base := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				defer func() {
					if v := recover(); v != nil {
						if v == http.ErrAbortHandler {
							panic(v) // net/http aborts the answer, and logs nothing
						}
						panics <- v
					}
				}()
				h.ServeHTTP(w, r)
			}))
			tr := http.DefaultTransport.(*http.Transport).Clone()
			t.Cleanup(tr.CloseIdleConnections)
			client := &http.Client{Transport: tr}
			quicks := int64(0)
			quick := func() {
				code, _, err := get(client, base+"/")
				require.NoError(t, err)
				require.Equal(t, http.StatusOK, code)
				quicks++
			}
			key := httpbreaker.DefaultHandlerKey

			// The breaker learns that the handler's calls come back within a bucket.
			for range 45 {
				quick()
				mock.Add(20 * time.Millisecond)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/stream", nil)
			require.NoError(t, err)
			if tc.hijack {
				req.Header.Set("Connection", "Upgrade")
				req.Header.Set("Upgrade", "test")
			}
			resp, err := client.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			line, err := bufio.NewReader(resp.Body).ReadString('\n')
			require.NoError(t, err)
			assert.Equal(t, "event\n", line)
			<-arrived
			assert.Equal(t, int64(1), reg.Answered(key), "marked answered at its first Flush or Hijack")

			// The stream stays open for 5 minutes.
			for range 30 {
				mock.Add(10 * time.Second)
				quick()
			}
			b := reg.Registry.Get(key)
			st := b.Stats()
			assert.Zero(t, st.TotalFailures, "failures while open: %v", st.Reasons)
			assert.Zero(t, st.TotalDrops)

			if tc.end == "leave" {
				cancel()
			} else {
				close(release)
			}
			all := tc.want
			all[0] += quicks
			waitFor(t, reg, func() bool { return reg.Outcomes(key) == all }, fmt.Sprint("outcomes ", all))
			if tc.end == "panic" {
				assert.Equal(t, "stream bug", <-panics, "raised again")
			}
			quick()
			all[0]++
			waitFor(t, reg, func() bool { return reg.Outcomes(key) == all }, fmt.Sprint("outcomes ", all))
			assert.Equal(t, all, reg.Outcomes(key), "recorded once")
			st = b.Stats()
			assert.Equal(t, tc.want[1], st.TotalFailures, "failures: %v", st.Reasons)
		})
	}
}

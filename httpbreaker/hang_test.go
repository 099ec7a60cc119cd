package httpbreaker_test

import (
	"bufio"
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

// A handler that streams (server-sent events) or takes the connection over
// (a WebSocket) is not counted against the server as a call that does not
// come back once its answer went out, while the breaker, which learned
// how long the handler's calls take, counts a call still out after a few
// times that (issue 27).
func TestHandler_ServeHTTP_longStreamIsNotOut(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stream func(w http.ResponseWriter) // answers, then returns; the handler then waits
		read   func(t *testing.T, resp *http.Response)
	}{
		{"flush", func(w http.ResponseWriter) {
			_, _ = io.WriteString(w, "event\n")
			w.(http.Flusher).Flush()
		}, func(t *testing.T, resp *http.Response) {
			line, err := bufio.NewReader(resp.Body).ReadString('\n')
			require.NoError(t, err)
			assert.Equal(t, "event\n", line)
		}},
		{"hijack", func(w http.ResponseWriter) {
			conn, rw, err := w.(http.Hijacker).Hijack()
			if err != nil {
				panic(err)
			}
			_, _ = rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: test\r\nConnection: Upgrade\r\n\r\n")
			_ = rw.Flush()
			go func() { // the connection lives until the client closes it
				_, _ = io.Copy(io.Discard, conn)
				_ = conn.Close()
			}()
		}, func(t *testing.T, resp *http.Response) {
			assert.Equal(t, http.StatusSwitchingProtocols, resp.StatusCode)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mock := clock.NewMock()
			mock.Set(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
			reg := newRegistry(breaker.WithClock(mock))
			release := make(chan struct{})
			h := httpbreaker.MustNewHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/stream" {
					return
				}
				tc.stream(w)
				<-release
			}), httpbreaker.WithBreakers(reg.Get))
			base := serve(t, h)
			tr := http.DefaultTransport.(*http.Transport).Clone()
			t.Cleanup(tr.CloseIdleConnections)
			client := &http.Client{Transport: tr}
			quick := func() {
				code, _, err := get(client, base+"/")
				require.NoError(t, err)
				require.Equal(t, http.StatusOK, code)
			}

			// The breaker learns that the handler's calls come back within a bucket.
			for range 60 {
				quick()
				mock.Add(20 * time.Millisecond)
			}
			for len(reg.Reported()) > 0 {
				<-reg.Reported()
			}
			req, err := http.NewRequest(http.MethodGet, base+"/stream", nil)
			require.NoError(t, err)
			if tc.name == "hijack" {
				req.Header.Set("Connection", "Upgrade")
				req.Header.Set("Upgrade", "test")
			}
			resp, err := client.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			tc.read(t, resp)
			select { // the answer went out
			case <-reg.Reported():
			case <-time.After(10 * time.Second):
				t.Fatal("the stream was not marked answered when its answer went out")
			}
			// The stream stays open for 5 s, 50 times the normal.
			for range 50 {
				mock.Add(100 * time.Millisecond)
				quick()
			}
			st := reg.Registry.Get(httpbreaker.DefaultHandlerKey).Stats()
			assert.Zero(t, st.TotalFailures, "failures: %v", st.Reasons)
			assert.Zero(t, st.TotalDrops)
			close(release)
		})
	}
}

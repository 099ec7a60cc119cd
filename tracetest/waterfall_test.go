package tracetest

import (
	"bytes"
	"context"
	"encoding/xml"
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/httpbreaker"
	"github.com/srebreaker/srebreaker/proba"
)

// update rewrites docs/pictures/trace-drop.svg from a run: make pictures.
var update = flag.Bool("update", false, "rewrite docs/pictures/trace-drop.svg")

// dropTrace makes calls through otelhttp's Transport over httpbreaker's to
// a loopback server that fails every request, until the breaker drops
// one, all in one span of the caller's, and returns the spans recorded.
// The breakers' clock stands still and their draws are seeded, so the
// same calls are made every run; only the spans' times change.
func dropTrace(t *testing.T) []sdktrace.ReadOnlySpan {
	t.Helper()
	rec, tp := recorder(t)
	prop := propagation.TraceContext{}
	srv := serveHTTP(t, otelhttp.NewHandler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	}), "GET /price", otelhttp.WithTracerProvider(tp), otelhttp.WithPropagators(prop)))
	mock := clock.NewMock()
	mock.Set(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	reg := breaker.MustNewRegistry(breaker.WithClock(mock), breaker.WithProba(proba.NewSeeded(1)))
	tr, err := httpbreaker.NewTransport(nil, httpbreaker.WithRegistry(reg))
	require.NoError(t, err)
	client := &http.Client{Transport: otelhttp.NewTransport(tr, otelhttp.WithTracerProvider(tp), otelhttp.WithPropagators(prop))}

	ctx, root := tp.Tracer("checkout").Start(context.Background(), "checkout: look up prices")
	var dropped error
	for i := 0; i < 50 && dropped == nil; i++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv+"/price", nil)
		require.NoError(t, err)
		resp, err := client.Do(req)
		if err != nil {
			dropped = err
			break
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
	root.End()
	require.ErrorIs(t, dropped, breaker.ErrServiceUnavailable, "the breaker sheds the failing host")
	require.Len(t, withDrop(rec), 1, "one dropped call")
	return rec.Ended()
}

// digits are the numbers of a picture: times, coordinates, the port.
var digits = regexp.MustCompile(`[0-9]+(\.[0-9]+)?`)

// shape returns the lines of a waterfall with its numbers masked, less
// the time axis's ticks, whose count follows the run's length.
func shape(svg string) []string {
	var out []string
	for _, line := range strings.Split(digits.ReplaceAllString(svg, "#"), "\n") {
		if !strings.Contains(line, `class="tick"`) {
			out = append(out, line)
		}
	}
	return out
}

// TestWriteWaterfall_dropTrace draws the trace of a dropped call and
// compares it with docs/pictures/trace-drop.svg: the same spans, names,
// events and attributes, in the same order. The numbers (times, and the
// coordinates drawn from them) change with every run, so they are
// compared as placeholders, and the time axis's ticks not at all.
func TestWriteWaterfall_dropTrace(t *testing.T) {
	spans := dropTrace(t)
	var buf bytes.Buffer
	require.NoError(t, WriteWaterfall(&buf, "The trace of a call the breaker dropped", spans))
	got := buf.Bytes()
	require.NoError(t, xml.Unmarshal(got, new(struct{})), "well-formed XML")
	assert.Less(t, len(got), 300<<10, "a picture of a few hundred KB at most")
	assert.Contains(t, string(got), `fill="`+dropColour+`"`, "the dropped call's span in red")
	assert.Contains(t, string(got), "srebreaker.drop_probability", "the event's attributes listed")

	path := filepath.Join("..", "docs", "pictures", "trace-drop.svg")
	if *update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "make pictures writes it")
	assert.Equal(t, shape(string(want)), shape(string(got)),
		"%s does not show what a run draws: make pictures", path)
}

func TestWriteWaterfall_noSpans(t *testing.T) {
	err := WriteWaterfall(io.Discard, "empty", nil)
	assert.EqualError(t, err, "tracetest: no spans to draw")
}

package picture_test

import (
	"bytes"
	"encoding/xml"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/ops/internal/picture"
)

func TestDraw(t *testing.T) {
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	var pts, gap []picture.Point
	for s := range 31 {
		at := start.Add(time.Duration(s) * time.Second)
		pts = append(pts, picture.Point{T: at, V: float64(s) / 30})
		if s < 10 || s > 20 {
			gap = append(gap, picture.Point{T: at, V: 40})
		}
	}
	panels := []picture.Panel{
		{Title: "Drop <probability>", Unit: "percentunit", Series: []picture.Series{{Legend: "inventory", Points: pts}}},
		{Title: "Calls", Unit: "reqps", Series: []picture.Series{{Legend: "a & b", Points: gap}}},
		{Title: "Empty", Unit: "none"},
	}
	var buf bytes.Buffer
	require.NoError(t, picture.Draw(&buf, "srebreaker", panels,
		[]picture.Mark{{T: start.Add(10 * time.Second), Label: "down"}}, start, start.Add(30*time.Second)))
	svg := buf.String()

	dec := xml.NewDecoder(strings.NewReader(svg))
	paths := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		require.NoError(t, err, "well-formed XML")
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "path" {
			paths++
		}
	}
	assert.Equal(t, 2, paths, "a line per series with points")
	assert.Contains(t, svg, "Drop &lt;probability&gt;", "escaped")
	assert.Contains(t, svg, "a &amp; b")
	assert.Contains(t, svg, ">100%<", "shares up to 100%")
	assert.Contains(t, svg, ">50/s<", "40/s rounds the axis up to 50/s")
	assert.Contains(t, svg, ">down<")
	assert.Len(t, regexp.MustCompile(`[" ]M[0-9]`).FindAllString(svg, -1), 3, "the gap breaks the second line in two")
	assert.Contains(t, svg, `height="616"`, "two rows of panels under the title")

	assert.Error(t, picture.Draw(io.Discard, "x", panels, nil, start, start), "no time to draw")
}

func TestLegend(t *testing.T) {
	labels := map[string]string{"breaker": "inventory", "criticality": "CRITICAL"}
	assert.Equal(t, "inventory CRITICAL", picture.Legend("{{breaker}} {{ criticality }}", labels))
	assert.Equal(t, "inventory drops", picture.Legend("{{breaker}} drops", labels))
	assert.Equal(t, " x", picture.Legend("{{mode}} x", labels), "a missing label is empty")
}

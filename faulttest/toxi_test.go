package faulttest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

// toxi is the toxiproxy server of the test process: its proxies run in
// this process, configured through its Go API rather than its HTTP one,
// which is never started.
var toxi = sync.OnceValue(func() *toxiproxy.ApiServer {
	return toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
})

// proxy is a toxiproxy proxy on a free port of 127.0.0.1 in front of a
// server, stopped when the test ends.
type proxy struct {
	t *testing.T
	p *toxiproxy.Proxy
}

// newProxy starts a proxy to upstream (host:port on 127.0.0.1).
func newProxy(t *testing.T, upstream string) *proxy {
	t.Helper()
	p := toxiproxy.NewProxy(toxi(), t.Name(), "127.0.0.1:0", upstream)
	require.NoError(t, p.Start())
	t.Cleanup(p.Stop)
	return &proxy{t: t, p: p}
}

// addr is where the proxy listens: the same address across a disable and
// an enable.
func (p *proxy) addr() string { return p.p.Listen }

// add adds a toxic, named for its type, on the stream given ("upstream":
// from the client to the server; "downstream": back), with the attributes
// given as JSON object members.
func (p *proxy) add(typ, stream, attributes string) {
	p.t.Helper()
	js := fmt.Sprintf(`{"type": %q, "stream": %q, "toxicity": 1, "attributes": {%s}}`, typ, stream, attributes)
	_, err := p.p.Toxics.AddToxicJson(strings.NewReader(js))
	require.NoError(p.t, err)
}

// remove removes the toxic add added.
func (p *proxy) remove(typ, stream string) {
	p.t.Helper()
	require.NoError(p.t, p.p.Toxics.RemoveToxic(context.Background(), typ+"_"+stream))
}

// disable closes the proxy's listener and every connection through it: the
// server looks down (connections refused).
func (p *proxy) disable() { p.p.Stop() }

// enable listens again on the same address.
func (p *proxy) enable() {
	p.t.Helper()
	require.NoError(p.t, p.p.Start())
}

package browsertest

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// chromiumFlags keep a headless Chromium on this machine: no sandbox (tests
// may run as root), and none of the background traffic (updates, sync,
// QUIC probes, first-run pages) that would try to reach the network.
var chromiumFlags = []string{
	"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
	"--disable-background-networking", "--disable-component-update", "--disable-sync",
	"--no-default-browser-check", "--disable-default-apps", "--disable-extensions", "--mute-audio",
	"--hide-scrollbars", "--remote-debugging-pipe",
}

// browser is a headless Chromium this test started, driven through the
// DevTools protocol over the pipe of --remote-debugging-pipe: JSON messages
// ended by a NUL byte, commands on the child's fd 3, answers and events on
// its fd 4.
type browser struct {
	t      testing.TB
	cmd    *exec.Cmd
	in     io.WriteCloser // the browser's fd 3
	stderr *tailBuffer

	mu      sync.Mutex
	nextID  int
	pending map[int]chan message // guarded by mu
	closed  error                // guarded by mu; why the pipe closed
	done    chan struct{}        // closed when the reader ends
}

// message is a command's answer or an event.
type message struct {
	ID        int             `json:"id,omitempty"`
	Method    string          `json:"method,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

// startChromium starts Chromium with a new, empty profile and stops it when
// the test ends. make test installs it (Debian's package) when it is
// missing; without it the test fails rather than skips.
func startChromium(t testing.TB) *browser {
	t.Helper()
	path := os.Getenv("CHROMIUM")
	if path == "" {
		var err error
		path, err = exec.LookPath("chromium")
		require.NoError(t, err, "chromium not found: make chromium installs it (apt-get install chromium), "+
			"or set CHROMIUM to a Chromium binary")
	}
	cmdR, cmdW, err := os.Pipe()
	require.NoError(t, err)
	outR, outW, err := os.Pipe()
	require.NoError(t, err)

	args := append(append([]string{}, chromiumFlags...), "--user-data-dir="+t.TempDir(), "about:blank")
	b := &browser{t: t, in: cmdW, stderr: &tailBuffer{max: 16 << 10}, pending: make(map[int]chan message),
		done: make(chan struct{})}
	b.cmd = exec.Command(path, args...)
	b.cmd.ExtraFiles = []*os.File{cmdR, outW} // fds 3 and 4
	b.cmd.Stderr = b.stderr
	require.NoError(t, b.cmd.Start())
	// The child holds its ends now.
	_ = cmdR.Close()
	_ = outW.Close()
	go b.read(outR)
	t.Cleanup(b.close)
	return b
}

// read dispatches the browser's answers until the pipe closes.
func (b *browser) read(r io.ReadCloser) {
	defer close(b.done)
	defer r.Close()
	br := bufio.NewReaderSize(r, 1<<20)
	var err error
	for {
		var raw []byte
		raw, err = br.ReadBytes(0)
		if err != nil {
			break
		}
		var m message
		if err = json.Unmarshal(raw[:len(raw)-1], &m); err != nil {
			break
		}
		if m.ID == 0 {
			continue // an event: none is needed here
		}
		b.mu.Lock()
		ch := b.pending[m.ID]
		delete(b.pending, m.ID)
		b.mu.Unlock()
		if ch != nil {
			ch <- m
		}
	}
	b.mu.Lock()
	b.closed = fmt.Errorf("chromium's pipe closed: %v", err)
	for id, ch := range b.pending {
		close(ch)
		delete(b.pending, id)
	}
	b.mu.Unlock()
}

// call sends method with params to the target of session ("" for the
// browser), waits for the answer until ctx is done and decodes its result
// into result, if not nil.
func (b *browser) call(ctx context.Context, session, method string, params, result any) error {
	b.mu.Lock()
	if b.closed != nil {
		err := b.closed
		b.mu.Unlock()
		return err
	}
	b.nextID++
	id := b.nextID
	ch := make(chan message, 1)
	b.pending[id] = ch
	b.mu.Unlock()

	if params == nil {
		params = struct{}{}
	}
	msg, err := json.Marshal(struct {
		ID        int    `json:"id"`
		SessionID string `json:"sessionId,omitempty"`
		Method    string `json:"method"`
		Params    any    `json:"params"`
	}{id, session, method, params})
	if err != nil {
		return err
	}
	if _, err := b.in.Write(append(msg, 0)); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	select {
	case m, ok := <-ch:
		if !ok {
			return fmt.Errorf("%s: chromium's pipe closed", method)
		}
		if m.Error != nil {
			return fmt.Errorf("%s: %s (%d)", method, m.Error.Message, m.Error.Code)
		}
		if result != nil {
			return json.Unmarshal(m.Result, result)
		}
		return nil
	case <-ctx.Done():
		b.mu.Lock()
		delete(b.pending, id)
		b.mu.Unlock()
		return fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

// close asks the browser to quit, and kills it if it has not within 5 s.
func (b *browser) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = b.call(ctx, "", "Browser.close", nil, nil)
	exited := make(chan error, 1)
	go func() { exited <- b.cmd.Wait() }()
	select {
	case <-exited:
	case <-ctx.Done():
		_ = b.cmd.Process.Kill()
		<-exited
	}
	_ = b.in.Close()
	<-b.done
	if b.t.Failed() {
		b.t.Logf("chromium's stderr, its end:\n%s", b.stderr.String())
	}
}

// tab is a page of the browser, attached in flat mode: commands to it carry
// its session id.
type tab struct {
	b       *browser
	session string
}

// newTab opens a blank page of width×height CSS pixels.
func (b *browser) newTab(ctx context.Context, width, height int) (*tab, error) {
	var target struct {
		TargetID string `json:"targetId"`
	}
	if err := b.call(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank"}, &target); err != nil {
		return nil, err
	}
	var attached struct {
		SessionID string `json:"sessionId"`
	}
	if err := b.call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true},
		&attached); err != nil {
		return nil, err
	}
	t := &tab{b: b, session: attached.SessionID}
	return t, t.resize(ctx, width, height)
}

func (t *tab) resize(ctx context.Context, width, height int) error {
	return t.b.call(ctx, t.session, "Emulation.setDeviceMetricsOverride",
		map[string]any{"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false}, nil)
}

// navigate loads url.
func (t *tab) navigate(ctx context.Context, url string) error {
	var r struct {
		ErrorText string `json:"errorText"`
	}
	if err := t.b.call(ctx, t.session, "Page.navigate", map[string]any{"url": url}, &r); err != nil {
		return err
	}
	if r.ErrorText != "" {
		return fmt.Errorf("Page.navigate %s: %s", url, r.ErrorText)
	}
	return nil
}

// eval evaluates the JavaScript expression expr in the page and decodes its
// value, which must be JSON, into result.
func (t *tab) eval(ctx context.Context, expr string, result any) error {
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	err := t.b.call(ctx, t.session, "Runtime.evaluate",
		map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true}, &r)
	if err != nil {
		return err
	}
	if e := r.ExceptionDetails; e != nil {
		return fmt.Errorf("evaluating %q: %s %s", expr, e.Text, e.Exception.Description)
	}
	if len(r.Result.Value) == 0 {
		return errors.New("evaluating " + expr + ": no value")
	}
	return json.Unmarshal(r.Result.Value, result)
}

// waitFor evaluates expr every 50 ms until it returns true, and fails the
// test if it has not within timeout; it returns the last error of eval, if
// any, in the message.
func (t *tab) waitFor(tb testing.TB, timeout time.Duration, what, expr string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		var ok bool
		if last = t.eval(ctx, expr, &ok); last == nil && ok {
			return
		}
		select {
		case <-ctx.Done():
			tb.Fatalf("waited %v for %s (%s); last error: %v", timeout, what, expr, last)
		case <-tick.C:
		}
	}
}

// screenshot returns the page as PNG, the whole of it.
func (t *tab) screenshot(ctx context.Context, width int) ([]byte, error) {
	var height int
	if err := t.eval(ctx, "Math.ceil(document.body.getBoundingClientRect().bottom)", &height); err != nil {
		return nil, err
	}
	if err := t.resize(ctx, width, height); err != nil {
		return nil, err
	}
	var r struct {
		Data string `json:"data"`
	}
	if err := t.b.call(ctx, t.session, "Page.captureScreenshot", map[string]any{"format": "png"}, &r); err != nil {
		return nil, err
	}
	return base64.StdEncoding.DecodeString(r.Data)
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (w *tailBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b = append(w.b, p...)
	if len(w.b) > w.max {
		w.b = append(w.b[:0], w.b[len(w.b)-w.max:]...)
	}
	return len(p), nil
}

func (w *tailBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.b)
}

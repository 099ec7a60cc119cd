// Package browsertest tests the status page (package statuspage) in a real
// headless Chromium: the page renders the breakers, updates itself as a
// dependency fails, and writes hostile names and reasons as text. It is a
// module of its own, not published, so that the core's tests need no
// browser; make test installs Chromium (Debian's package) when it is
// missing and runs it.
//
// The tests drive Chromium through the DevTools protocol over a pipe
// (--remote-debugging-pipe), with the standard library alone: no port is
// opened for the browser, and it reaches nothing but the page's server on
// 127.0.0.1. With UPDATE_SCREENSHOT=1, TestPage_inChromium writes the page
// it sees to docs/statuspage.png.
package browsertest

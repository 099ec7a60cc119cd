package main

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// rows runs the chain with args at 100 calls/s and returns its row for
// each protocol, failing t unless there is one per protocol.
func rows(t *testing.T, args ...string) []string {
	t.Helper()
	var out bytes.Buffer
	if err := run(append(args, "-rates", "100"), &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, line := range strings.Split(out.String(), "\n") {
		for _, proto := range []string{"http", "grpc", "connect"} {
			if strings.HasPrefix(line, "| "+proto+" | 100 | 1 | ") {
				got = append(got, line)
			}
		}
	}
	if len(got) != 3 {
		t.Fatalf("%d rows, want 3:\n%s", len(got), out.String())
	}
	return got
}

// TestRun_short runs the chain over each protocol for 3 s. Its figures
// depend on the machine's timing, so the test holds them only to what
// every run must give: a row per protocol, and no breaker but B's for C
// that sheds.
func TestRun_short(t *testing.T) {
	for _, line := range rows(t, "-healthy", "500ms", "-outage", "2s", "-healed", "500ms") {
		if !strings.Contains(line, "| 0.00, 0.00, 0.00, 0.00, ") {
			t.Errorf("a breaker other than B's for C dropped: %s", line)
		}
	}
}

// TestRun_shortHang runs the chain over each protocol with C hanging for
// 3 s: the servers' breakers, A's Handler and B's, never drop, whichever
// of the clients' do (see docs/design/behaviour.md, "A hang behind a
// served route").
func TestRun_shortHang(t *testing.T) {
	for _, line := range rows(t, "-fault", "hang", "-healthy", "2s", "-outage", "3s", "-healed", "500ms") {
		drops := strings.Split(strings.Split(line, " | ")[3], ", ")
		if len(drops) != 5 || drops[1] != "0.00" || drops[3] != "0.00" {
			t.Errorf("a server's breaker dropped: %s", line)
		}
	}
}

func TestRun_invalid(t *testing.T) {
	for _, args := range [][]string{
		{"-protocols", "smtp"}, {"-rates", "0"}, {"-rates", "x"}, {"-outage", "1s"}, {"-runs", "0"}, {"-healed", "0s"},
		{"-fault", "slow"},
	} {
		if err := run(args, io.Discard, io.Discard); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}

package main

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// TestRun_short runs the chain over each protocol for 3 s. Its figures
// depend on the machine's timing, so the test holds them only to what
// every run must give: a row per protocol, and no breaker but B's for C
// that sheds.
func TestRun_short(t *testing.T) {
	var out bytes.Buffer
	err := run([]string{"-rates", "100", "-healthy", "500ms", "-outage", "2s", "-healed", "500ms"}, &out, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	rows := 0
	for _, line := range strings.Split(out.String(), "\n") {
		for _, proto := range []string{"http", "grpc", "connect"} {
			if !strings.HasPrefix(line, "| "+proto+" | 100 | 1 | ") {
				continue
			}
			rows++
			if !strings.Contains(line, "| 0.00, 0.00, 0.00, 0.00, ") {
				t.Errorf("a breaker other than B's for C dropped: %s", line)
			}
		}
	}
	if rows != 3 {
		t.Errorf("%d rows, want 3:\n%s", rows, out.String())
	}
}

// TestRun_shortHang runs the chain over each protocol with C hanging for
// 3 s: the servers' breakers, A's Handler and B's, never drop, whichever
// of the clients' do (see docs/design/behaviour.md, "A hang behind a
// served route").
func TestRun_shortHang(t *testing.T) {
	var out bytes.Buffer
	err := run([]string{"-fault", "hang", "-rates", "100", "-healthy", "2s", "-outage", "3s", "-healed", "500ms"}, &out, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	rows := 0
	for _, line := range strings.Split(out.String(), "\n") {
		for _, proto := range []string{"http", "grpc", "connect"} {
			if !strings.HasPrefix(line, "| "+proto+" | 100 | 1 | ") {
				continue
			}
			rows++
			drops := strings.Split(strings.Split(line, " | ")[3], ", ")
			if len(drops) != 5 || drops[1] != "0.00" || drops[3] != "0.00" {
				t.Errorf("a server's breaker dropped: %s", line)
			}
		}
	}
	if rows != 3 {
		t.Errorf("%d rows, want 3:\n%s", rows, out.String())
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

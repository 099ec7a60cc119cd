// Command dashboard writes the Grafana dashboard of package ops
// (ops.Dashboard) to a file: go generate in ops runs
//
//	go run ./cmd/dashboard -out dashboard.json
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/srebreaker/srebreaker/ops"
)

func main() {
	out := flag.String("out", "dashboard.json", "file to write")
	flag.Parse()
	b, err := ops.Dashboard()
	if err == nil {
		err = os.WriteFile(*out, b, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "dashboard:", err)
		os.Exit(1)
	}
}

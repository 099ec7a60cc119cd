// Command openloop sends GET requests to a URL at a fixed rate, open loop
// (each on time, whether or not the ones before were answered), a share
// of them marked SHEDDABLE in httpbreaker's criticality header, and
// prints how they ended: by status code, "timeout" for those not
// answered within -timeout, "error" for other failures. It is a user's
// view of a server under more traffic than it can serve, such as
// examples/service:
//
//	cd examples/service && go run . -rate 0 -down 0 -addr 127.0.0.1:18080 -ops 127.0.0.1:18081
//	cd bench && GOWORK=off go run ./cmd/openloop -url http://127.0.0.1:18080/checkout -rate 5000 -for 10s
//
// Flags:
//
//	-url        the URL to send to (it must be on 127.0.0.1)
//	-rate       requests a second (default 1000)
//	-for        how long to send (default 10s)
//	-timeout    how long a request may take (default 1s)
//	-sheddable  share of the requests marked SHEDDABLE (default 0.3)
//	-seed       seed of the choice of levels (default 1)
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/srebreaker/srebreaker/httpbreaker"
)

func main() {
	target := flag.String("url", "", "the URL to send to (it must be on 127.0.0.1)")
	rate := flag.Float64("rate", 1000, "requests a second")
	span := flag.Duration("for", 10*time.Second, "how long to send")
	timeout := flag.Duration("timeout", time.Second, "how long a request may take")
	sheddable := flag.Float64("sheddable", 0.3, "share of the requests marked SHEDDABLE")
	seed := flag.Uint64("seed", 1, "seed of the choice of levels")
	flag.Parse()
	if err := check(*target, *rate, *span, *timeout, *sheddable); err != nil {
		fmt.Fprintln(os.Stderr, "openloop:", err)
		os.Exit(2)
	}
	counts := send(*target, *rate, *span, *timeout, *sheddable, *seed)
	keys := make([]string, 0, len(counts))
	total := 0
	for k, n := range counts {
		keys = append(keys, k)
		total += n
	}
	slices.Sort(keys)
	fmt.Printf("%d requests in %v (%.0f a second)\n", total, *span, float64(total)/span.Seconds())
	for _, k := range keys {
		fmt.Printf("%-8s %7d  %5.1f %%\n", k, counts[k], 100*float64(counts[k])/float64(total))
	}
}

// check reports what is wrong with the flags, if anything.
func check(target string, rate float64, span, timeout time.Duration, sheddable float64) error {
	u, err := url.Parse(target)
	switch {
	case err != nil:
		return fmt.Errorf("-url %q: %w", target, err)
	case u.Hostname() != "127.0.0.1":
		return fmt.Errorf("-url %q: must be on 127.0.0.1", target)
	case !(rate > 0 && rate <= 1e6): // !(…) catches NaN
		return fmt.Errorf("-rate %v: must be above 0 and at most 1e6", rate)
	case span <= 0:
		return fmt.Errorf("-for %v: must be above 0", span)
	case timeout <= 0:
		return fmt.Errorf("-timeout %v: must be above 0", timeout)
	case !(sheddable >= 0 && sheddable <= 1):
		return fmt.Errorf("-sheddable %v: must be between 0 and 1", sheddable)
	}
	return nil
}

// send sends rate requests a second for span, each started on time, and
// returns how many ended each way.
func send(target string, rate float64, span, timeout time.Duration, sheddable float64, seed uint64) map[string]int {
	client := &http.Client{
		Transport: &http.Transport{MaxIdleConnsPerHost: 4096},
		Timeout:   timeout,
	}
	rnd := rand.New(rand.NewPCG(seed, 0))
	var mu sync.Mutex
	counts := map[string]int{}
	var wg sync.WaitGroup
	start := time.Now()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for sent := 0; ; {
		now := <-tick.C
		elapsed := now.Sub(start)
		if elapsed >= span {
			break
		}
		for due := int(elapsed.Seconds() * rate); sent < due; sent++ {
			shed := rnd.Float64() < sheddable
			wg.Add(1)
			go func() {
				defer wg.Done()
				k := get(client, target, shed)
				mu.Lock()
				counts[k]++
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	return counts
}

// get sends one request and says how it ended.
func get(client *http.Client, target string, sheddable bool) string {
	req, err := http.NewRequest(http.MethodGet, target, nil)
	if err != nil {
		return "error"
	}
	if sheddable {
		req.Header.Set(httpbreaker.CriticalityHeader, "SHEDDABLE")
	}
	resp, err := client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) && ue.Timeout() {
			return "timeout"
		}
		return "error"
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return strconv.Itoa(resp.StatusCode)
}

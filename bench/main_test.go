package bench

import (
	"os"
	"testing"

	"github.com/zeromicro/go-zero/core/logx"
	"github.com/zeromicro/go-zero/core/stat"
)

// TestMain silences go-zero's logs: its stat package prints a usage line
// every minute, and its breaker logs an alert on the first drop, either of
// which could land in the middle of a benchmark line and spoil the results
// file. The work behind them (building the alert text on every drop, the
// rate limiter in front of the alert) still runs.
func TestMain(m *testing.M) {
	logx.Disable()
	stat.DisableLog()
	os.Exit(m.Run())
}

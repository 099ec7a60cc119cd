package override_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/srebreaker/srebreaker/override"
)

func TestMode_String(t *testing.T) {
	assert.Equal(t, "shed_all", override.ShedAll.String())
	assert.Equal(t, "shed_none", override.ShedNone.String())
	assert.Equal(t, "Mode(0)", override.Mode(0).String())
}

func TestActive_Remaining(t *testing.T) {
	at := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	a := override.Active{SetAt: at, Expires: at.Add(time.Minute)}
	assert.Equal(t, time.Minute, a.Remaining(at))
	assert.Equal(t, time.Second, a.Remaining(at.Add(59*time.Second)))
	assert.Equal(t, time.Duration(0), a.Remaining(at.Add(time.Minute)))
	assert.Equal(t, time.Duration(0), a.Remaining(at.Add(time.Hour)), "never below 0")
}

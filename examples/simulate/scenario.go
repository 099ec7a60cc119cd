package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"
)

// Bounds of a scenario. maxRequests keeps a run to well under a minute of
// wall time (about 7 million requests a second here).
const (
	maxRequests     = 100_000_000
	maxDuration     = 24 * time.Hour
	maxRate         = 1_000_000
	maxLatency      = time.Hour
	maxPhases       = 1000
	maxPhaseName    = 32
	maxScenarioSize = 1 << 20 // bytes of a scenario file
)

// role says which figure of the comparison row a phase feeds.
type role int

const (
	noRole role = iota
	roleHealthy
	roleOutage
	roleHealed
	roleOverload
)

var roleNames = [...]string{noRole: "", roleHealthy: "healthy", roleOutage: "outage", roleHealed: "healed",
	roleOverload: "overload"}

func (r role) String() string { return roleNames[r] }

// phase is a stretch of time in which the offered traffic and the
// dependency's behaviour stay the same.
type phase struct {
	name     string
	role     role
	length   time.Duration
	rate     float64       // requests offered per second, evenly spaced; 0 to maxRate
	errors   float64       // share of the served calls that fail, 0 to 1
	capacity float64       // calls per second the dependency serves; the excess fails; +Inf for no limit
	latency  time.Duration // from a call's admission to its outcome reaching the breaker, if distribution is fixed
	// distribution is how the latency varies from call to call; the zero
	// value gives every call latency.
	distribution distribution
	// saysOverloaded: the dependency fails the calls beyond capacity saying
	// it is overloaded, and they are reported with
	// srebreaker.RejectOverloaded; those failing at the error rate are
	// rejected as any failure. Only with a capacity.
	saysOverloaded bool
}

// requests returns how many calls the phase offers: floor(length·rate).
// For whole rates it is exact, and split so that a day at the highest rate
// does not overflow.
func (p phase) requests() int64 {
	if r := int64(p.rate); float64(r) == p.rate {
		whole, frac := int64(p.length/time.Second), int64(p.length%time.Second)
		return whole*r + frac*r/int64(time.Second)
	}
	return int64(math.Floor(p.length.Seconds() * p.rate))
}

// arrival returns when call i of the phase arrives, since the phase began.
// Integer rates use integer arithmetic, so their arrivals fall on exact
// nanoseconds.
func (p phase) arrival(i int64) time.Duration {
	if r := int64(p.rate); float64(r) == p.rate {
		return time.Duration(i * int64(time.Second) / r)
	}
	return time.Duration(float64(i) * float64(time.Second) / p.rate)
}

// scenario is the run the simulation plays: phases one after another.
type scenario struct {
	source string // the file it was read from; empty for the one the flags describe
	phases []phase
	mix    mix // the calls' criticalities; the zero mix for calls without one
	// With a mix: fifo has the dependency serve calls first come, first
	// served, whatever their level, rather than the highest levels first;
	// shuffle gives the levels of each 100 ms slot in a seeded random
	// order rather than spread evenly.
	fifo, shuffle bool
	// timeout is the client's: a call unanswered after it fails then
	// ("context deadline exceeded"); 0 for none.
	timeout time.Duration
}

func (s scenario) length() time.Duration {
	var total time.Duration
	for _, p := range s.phases {
		total += p.length
	}
	return total
}

// phaseAt returns the index of the phase in force at d since the start,
// skipping empty phases; past the end, the last phase.
func (s scenario) phaseAt(d time.Duration) int {
	var end time.Duration
	last := 0
	for i, p := range s.phases {
		if p.length == 0 {
			continue
		}
		end += p.length
		last = i
		if d < end {
			return i
		}
	}
	return last
}

// saysOverloaded reports whether any phase's dependency says when it turns
// calls away for overload.
func (s scenario) saysOverloaded() bool {
	for _, p := range s.phases {
		if p.saysOverloaded {
			return true
		}
	}
	return false
}

// hasLatency reports whether any call's outcome may be delayed.
func (s scenario) hasLatency() bool {
	for _, p := range s.phases {
		if p.distribution.delays(p.latency) {
			return true
		}
	}
	return false
}

// validate checks what a scenario file may get wrong; the flags' scenario
// passes through it too. Errors name the phase by its 1-based position.
func (s scenario) validate() error {
	if len(s.phases) == 0 {
		return errors.New("no phases: a scenario needs at least one")
	}
	if (s.fifo || s.shuffle) && !s.mix.set() {
		return errors.New("fifo and shuffle: describe calls with a criticality; give a mix too")
	}
	if s.timeout < 0 || s.timeout > maxLatency {
		return fmt.Errorf("timeout %v: must be between 0 (none) and %v", s.timeout, maxLatency)
	}
	if len(s.phases) > maxPhases {
		return fmt.Errorf("%d phases: at most %d", len(s.phases), maxPhases)
	}
	var total time.Duration
	var requests int64
	roles := map[role]int{}
	for i, p := range s.phases {
		if err := p.validate(); err != nil {
			return fmt.Errorf("phase %d (%q): %w", i+1, p.name, err)
		}
		if p.distribution.shape == shapeHang && s.timeout == 0 {
			return fmt.Errorf("phase %d (%q): latency hang: its calls never answer; give the client a timeout", i+1, p.name)
		}
		if p.role != noRole {
			if j, ok := roles[p.role]; ok {
				return fmt.Errorf("phase %d (%q): role %q: already given to phase %d; each role may be given once",
					i+1, p.name, p.role, j+1)
			}
			roles[p.role] = i
		}
		total += p.length
		requests += p.requests()
	}
	if total > maxDuration {
		return fmt.Errorf("phases add up to %v: at most 24h can be simulated", total)
	}
	if requests > maxRequests {
		return fmt.Errorf("phases make %d requests: at most %d can be simulated", requests, maxRequests)
	}
	return nil
}

func (p phase) validate() error {
	switch {
	case len(p.name) > maxPhaseName:
		return fmt.Errorf("name: at most %d characters", maxPhaseName)
	case p.length < 0:
		return fmt.Errorf("duration %v: must not be negative", p.length)
	case p.length > maxDuration:
		return fmt.Errorf("duration %v: at most %v can be simulated", p.length, maxDuration)
	case !(p.rate >= 0 && p.rate <= maxRate): // also catches NaN
		return fmt.Errorf("rate %v: must be between 0 and %d requests/s", p.rate, maxRate)
	case !(p.errors >= 0 && p.errors <= 1):
		return fmt.Errorf("errors %v: must be between 0 and 1", p.errors)
	case math.IsNaN(p.capacity) || p.capacity < 0:
		return fmt.Errorf("capacity %v: must be at least 0 requests/s (leave it out for no limit)", p.capacity)
	case p.saysOverloaded && math.IsInf(p.capacity, 1):
		return errors.New("saysOverloaded: no call is beyond the capacity of a phase without one; give a capacity too")
	}
	return checkLatency(p.latency, p.distribution)
}

// scenarioJSON is the file format; see the package comment.
type scenarioJSON struct {
	Description string      `json:"description"` // free text, ignored
	Phases      []phaseJSON `json:"phases"`
	Mix         []float64   `json:"mix"` // weights of CRITICAL_PLUS, CRITICAL, SHEDDABLE_PLUS, SHEDDABLE
	FIFO        bool        `json:"fifo"`
	Shuffle     bool        `json:"shuffle"`
	Timeout     string      `json:"timeout"` // the client's, a Go duration; none if empty
}

type phaseJSON struct {
	Name     string   `json:"name"`
	Role     string   `json:"role"`
	Duration string   `json:"duration"`
	Rate     *float64 `json:"rate"`
	Errors   float64  `json:"errors"`
	Capacity *float64 `json:"capacity"`
	// SaysOverloaded: the calls beyond Capacity are rejected as the
	// dependency's overload (srebreaker.RejectOverloaded).
	SaysOverloaded bool   `json:"saysOverloaded"`
	Latency        string `json:"latency"`
}

// loadScenario reads a scenario file. Errors start with the file name.
func loadScenario(path string) (scenario, error) {
	f, err := os.Open(path)
	if err != nil {
		return scenario{}, err
	}
	defer f.Close()
	s, err := parseScenario(f)
	if err != nil {
		return scenario{}, fmt.Errorf("%s: %w", path, err)
	}
	s.source = path
	return s, nil
}

// parseScenario reads and validates a scenario in the JSON format.
func parseScenario(r io.Reader) (scenario, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxScenarioSize+1))
	if err != nil {
		return scenario{}, err
	}
	if len(data) > maxScenarioSize {
		return scenario{}, fmt.Errorf("larger than %d bytes", maxScenarioSize)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var file scenarioJSON
	if err := dec.Decode(&file); err != nil {
		return scenario{}, jsonError(data, err)
	}
	if dec.More() {
		return scenario{}, fmt.Errorf("line %d: unexpected data after the scenario object", lineAt(data, dec.InputOffset()))
	}
	var s scenario
	for i, pj := range file.Phases {
		p, err := pj.phase(i)
		if err != nil {
			return scenario{}, fmt.Errorf("phase %d (%q): %w", i+1, p.name, err)
		}
		s.phases = append(s.phases, p)
	}
	if file.Mix != nil {
		if len(file.Mix) != 4 {
			return scenario{}, fmt.Errorf("mix: %d weights: want four, CRITICAL_PLUS, CRITICAL, SHEDDABLE_PLUS, SHEDDABLE, such as [20, 40, 20, 20]", len(file.Mix))
		}
		copy(s.mix[:], file.Mix)
		if err := s.mix.validate(); err != nil {
			return scenario{}, err
		}
	}
	s.fifo, s.shuffle = file.FIFO, file.Shuffle
	if file.Timeout != "" {
		if s.timeout, err = time.ParseDuration(file.Timeout); err != nil {
			return scenario{}, fmt.Errorf(`timeout %q: not a Go duration such as "30s"`, file.Timeout)
		}
	}
	if err := s.validate(); err != nil {
		return scenario{}, err
	}
	return s, nil
}

// phase converts what the file says into a phase; the checks of ranges are
// left to [phase.validate].
func (pj phaseJSON) phase(i int) (phase, error) {
	p := phase{name: pj.Name, capacity: math.Inf(1), errors: pj.Errors, saysOverloaded: pj.SaysOverloaded}
	if p.name == "" {
		p.name = fmt.Sprintf("phase %d", i+1)
	}
	switch {
	case pj.Duration == "":
		return p, errors.New(`duration: missing (a Go duration such as "10s" or "1m30s")`)
	case pj.Rate == nil:
		return p, errors.New("rate: missing (requests offered per second)")
	}
	var err error
	if p.length, err = time.ParseDuration(pj.Duration); err != nil {
		return p, fmt.Errorf(`duration %q: not a Go duration such as "10s" or "1m30s"`, pj.Duration)
	}
	if p.length == 0 {
		return p, errors.New("duration 0s: must be positive")
	}
	p.rate = *pj.Rate
	if pj.Capacity != nil {
		p.capacity = *pj.Capacity
	}
	if pj.Latency != "" {
		if p.latency, p.distribution, err = parseLatency(pj.Latency); err != nil {
			return p, err
		}
	}
	if pj.Role != "" {
		for r, name := range roleNames {
			if r != int(noRole) && pj.Role == name {
				p.role = role(r)
			}
		}
		if p.role == noRole {
			return p, fmt.Errorf("role %q: must be one of %s", pj.Role, strings.Join(roleNames[1:], ", "))
		}
	}
	return p, nil
}

// jsonError rewrites a decoding error to name the line, and the field where
// encoding/json knows it.
func jsonError(data []byte, err error) error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fmt.Errorf("line %d: %v", lineAt(data, syntax.Offset), syntax)
	case errors.As(err, &typ):
		return fmt.Errorf("line %d: %s: a %s, not a JSON %s", lineAt(data, typ.Offset), typ.Field, jsonKind(typ.Type.Kind().String()), typ.Value)
	case errors.Is(err, io.EOF):
		return errors.New("empty file: expected a JSON object with a phases list")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("unexpected end of file")
	}
	return errors.New(strings.TrimPrefix(err.Error(), "json: "))
}

// jsonKind names a Go kind the way the file's author thinks of it.
func jsonKind(kind string) string {
	switch kind {
	case "float64", "int", "int64":
		return "number"
	case "slice":
		return "list"
	case "struct", "map":
		return "object"
	}
	return kind
}

// lineAt returns the 1-based line of byte offset off in data.
func lineAt(data []byte, off int64) int {
	off = min(max(off, 0), int64(len(data)))
	return 1 + bytes.Count(data[:off], []byte("\n"))
}

package prombreaker

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
)

// DefaultNamespace is the prefix of every metric name unless
// [WithNamespace] says otherwise: srebreaker_requests_total and so on.
const DefaultNamespace = "srebreaker"

// BreakerLabel is the label that holds a breaker's name on every series.
const BreakerLabel = "breaker"

// SourceLabel is the label that holds the name of a breaker's source on
// every series of a [Collector] over [Sources].
const SourceLabel = "source"

// CriticalityLabel is the label that holds the level, as
// `criticality.Level.String` names it (CRITICAL_PLUS, CRITICAL,
// SHEDDABLE_PLUS or SHEDDABLE), on the series by criticality: those of the
// breakers that have counted a call at a level other than the default, and
// srebreaker_overload_rejections_total.
const CriticalityLabel = "criticality"

// OverrideModeLabel is the label that holds an override's mode, as
// `override.Mode.String` names it (shed_all or shed_none), on the
// series of srebreaker_override.
const OverrideModeLabel = "mode"

// ErrInvalidOption is wrapped by the error [NewCollector] returns for an
// invalid source or option; the full text names the option and what was
// wrong with it.
var ErrInvalidOption = errors.New("prombreaker: invalid option")

// Option configures a [Collector].
type Option func(*options)

type options struct {
	namespace string
	labels    prometheus.Labels // constant labels; nil when there are none
}

// nameRE matches what this package accepts as a namespace or a label name:
// Prometheus's classic names, without the colons that are reserved for
// recording rules.
var nameRE = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// newOptions applies opts over the defaults and validates them.
func newOptions(opts []Option) (*options, error) {
	o := &options{namespace: DefaultNamespace}
	for _, opt := range opts {
		if opt == nil {
			return nil, fmt.Errorf("%w: a nil Option was given", ErrInvalidOption)
		}
		opt(o)
	}
	if !nameRE.MatchString(o.namespace) {
		return nil, fmt.Errorf("%w: WithNamespace(%q): a namespace is a letter or an underscore, "+
			"then letters, digits and underscores", ErrInvalidOption, o.namespace)
	}
	// Sorted, so that the error names the same label every time.
	for _, name := range slices.Sorted(maps.Keys(o.labels)) {
		value := o.labels[name]
		switch {
		case !nameRE.MatchString(name):
			return nil, fmt.Errorf("%w: WithConstLabels(%q=%q): a label name is a letter or an underscore, "+
				"then letters, digits and underscores", ErrInvalidOption, name, value)
		case strings.HasPrefix(name, "__"):
			return nil, fmt.Errorf("%w: WithConstLabels(%q=%q): names that start with __ are reserved",
				ErrInvalidOption, name, value)
		case name == BreakerLabel:
			return nil, fmt.Errorf("%w: WithConstLabels(%q=%q): the collector sets %q to each breaker's name",
				ErrInvalidOption, name, value, BreakerLabel)
		case name == CriticalityLabel:
			return nil, fmt.Errorf("%w: WithConstLabels(%q=%q): the collector sets %q to each level's name",
				ErrInvalidOption, name, value, CriticalityLabel)
		case name == OverrideModeLabel:
			return nil, fmt.Errorf("%w: WithConstLabels(%q=%q): the collector sets %q to an override's mode",
				ErrInvalidOption, name, value, OverrideModeLabel)
		case !utf8.ValidString(value):
			return nil, fmt.Errorf("%w: WithConstLabels(%q=%q): the value is not valid UTF-8",
				ErrInvalidOption, name, value)
		}
	}
	return o, nil
}

// WithNamespace sets the prefix of the metric names, joined to them with
// an underscore: WithNamespace("payments_client") gives
// payments_client_requests_total and so on. Default [DefaultNamespace]. It
// must be a letter or an underscore followed by letters, digits and
// underscores; anything else, the empty string among them, is an error
// from [NewCollector].
func WithNamespace(namespace string) Option {
	return func(o *options) { o.namespace = namespace }
}

// WithConstLabels adds labels with fixed values to every series, such as
// zone="eu-1". Two collectors whose constant labels have the same names and
// different values can be registered with one Prometheus registry, though
// one collector over [Sources] is simpler. Default: none. Each name must be a letter or an
// underscore followed by letters, digits and underscores, must not start
// with two underscores and must not be [BreakerLabel] or
// [CriticalityLabel] (nor [SourceLabel]
// for a collector over Sources); each value must be
// valid UTF-8. The map is copied; later options add to it, and a name given
// twice takes the later value.
func WithConstLabels(labels prometheus.Labels) Option {
	return func(o *options) {
		if len(labels) == 0 {
			return
		}
		if o.labels == nil {
			o.labels = make(prometheus.Labels, len(labels))
		}
		maps.Copy(o.labels, labels)
	}
}

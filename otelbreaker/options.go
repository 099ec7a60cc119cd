package otelbreaker

import (
	"errors"
	"fmt"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
)

// ErrInvalidOption is wrapped by the error [Register] returns for an
// invalid option or a nil registry; the full text names what was wrong.
var ErrInvalidOption = errors.New("otelbreaker: invalid option")

// Option configures [Register].
type Option func(*options)

type options struct {
	provider metric.MeterProvider
}

// newOptions applies opts over the defaults and validates them.
func newOptions(opts []Option) (*options, error) {
	o := &options{provider: otel.GetMeterProvider()}
	for _, opt := range opts {
		if opt == nil {
			return nil, fmt.Errorf("%w: a nil Option was given", ErrInvalidOption)
		}
		opt(o)
	}
	if o.provider == nil {
		return nil, fmt.Errorf("%w: WithMeterProvider(nil): meter provider must not be nil", ErrInvalidOption)
	}
	return o, nil
}

// WithMeterProvider sets the provider the instruments are created with,
// such as an SDK's MeterProvider with a reader and exporter of its own.
// Default: the global provider, otel.GetMeterProvider() at the time of
// [Register]; until the program calls otel.SetMeterProvider it records
// nothing, and after that it forwards to the provider set. It must not be
// nil.
func WithMeterProvider(p metric.MeterProvider) Option {
	return func(o *options) { o.provider = p }
}

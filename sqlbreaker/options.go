package sqlbreaker

import (
	"errors"
	"fmt"

	"github.com/srebreaker/srebreaker"
	"github.com/srebreaker/srebreaker/breaker"
)

// ErrInvalidOption is wrapped by the error that [Wrap], [WrapDriver] and
// [Open] return when an option is invalid; the full text names the option
// and what was wrong with it. Test it with errors.Is.
var ErrInvalidOption = errors.New("sqlbreaker: invalid option")

// DefaultName is the name of the breaker a wrapper makes for itself when
// neither [WithName] nor [WithBreaker] is given.
const DefaultName = "sql"

// Option configures a wrapper made by [Wrap], [WrapDriver] or [Open].
type Option func(*options)

type options struct {
	name       string
	nameSet    bool
	b          breaker.Breaker
	breakerSet bool
	acceptable srebreaker.Acceptable
	nilOption  bool
}

// newOptions applies opts over the defaults and validates them; without
// WithBreaker, it makes the wrapper's own breaker.
func newOptions(opts []Option) (*options, error) {
	o := &options{name: DefaultName, acceptable: DefaultAcceptable}
	for _, opt := range opts {
		if opt == nil {
			o.nilOption = true
			continue
		}
		opt(o)
	}
	switch {
	case o.nilOption:
		return nil, fmt.Errorf("%w: a nil Option was given", ErrInvalidOption)
	case o.nameSet && o.name == "":
		return nil, fmt.Errorf("%w: WithName(%q): the name must not be empty", ErrInvalidOption, o.name)
	case o.breakerSet && o.b == nil:
		return nil, fmt.Errorf("%w: WithBreaker(nil): the breaker must not be nil", ErrInvalidOption)
	case o.breakerSet && o.nameSet:
		return nil, fmt.Errorf("%w: WithName(%q) and WithBreaker: give one; a breaker has its own name",
			ErrInvalidOption, o.name)
	case o.acceptable == nil:
		return nil, fmt.Errorf("%w: WithAcceptable(nil): the function must not be nil", ErrInvalidOption)
	}
	if o.b == nil {
		b, err := breaker.New(breaker.WithName(o.name))
		if err != nil {
			return nil, err
		}
		o.b = b
	}
	return o, nil
}

// WithName names the breaker the wrapper makes for itself, with
// [breaker.New]'s defaults; the error of a dropped call quotes the name.
// Default [DefaultName] ("sql"). Each wrapper has a breaker of its own: two
// wrappers with the same name do not share one (give both the same
// [WithBreaker] for that). The name must not be empty, and WithName cannot
// be combined with WithBreaker.
func WithName(name string) Option {
	return func(o *options) { o.name, o.nameSet = name, true }
}

// WithBreaker sets the breaker that guards the database, instead of one
// the wrapper makes for itself: a breaker with options of your own
// ([breaker.New]), or one from a registry, so that exporters given the
// registry report it:
//
//	sqlbreaker.WithBreaker(registry.Get("orders-db"))
//
// A breaker taken from a [breaker.Registry] once is kept by the wrapper
// even if the registry forgets it later (see [breaker.Registry.SetLimit]:
// only past its limit of thousands of names). Wrappers given the same
// breaker share it. It must not be nil.
func WithBreaker(b breaker.Breaker) Option {
	return func(o *options) { o.b, o.breakerSet = b, true }
}

// WithAcceptable sets the function that decides whether an error the
// driver returned still counts as a success: the server answered, and the
// answer was about the request, not the server's health. Default
// [DefaultAcceptable]. Some errors are decided before it is asked (see
// [Wrap]): the driver's driver.ErrSkip and driver.ErrBadConn, and the
// caller's own cancellation, count neither way. Extend the default rather
// than replace it:
//
//	sqlbreaker.WithAcceptable(func(err error) bool {
//		return sqlbreaker.DefaultAcceptable(err) || sqlbreaker.SQLStateClass(err) == "42" // our own bad SQL
//	})
//
// It may be called from many goroutines at once; a panic in it is recorded
// as a failure and raised again. It must not be nil.
func WithAcceptable(acceptable srebreaker.Acceptable) Option {
	return func(o *options) { o.acceptable = acceptable }
}

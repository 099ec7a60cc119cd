package sqlbreaker_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/proba"
	"github.com/srebreaker/srebreaker/sqlbreaker"
)

// A database whose server went away: once the breaker has seen enough
// failed connections, it drops calls, which fail at once with an error
// matching breaker.ErrServiceUnavailable instead of waiting on the
// network, and lets a few through to find out when the server is back.
func Example() {
	// In a program, the connector is the driver's, such as pgx's
	// stdlib.GetConnector(cfg), and the breaker sqlbreaker.WithName's; here
	// a server that refuses connections, and a breaker on a mock clock with
	// a fixed random source, so that the output is always the same.
	connector := refusingConnector{}
	mock := clock.NewMock()
	mock.Set(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	b := breaker.MustNew(breaker.WithName("orders-db"), breaker.WithClock(mock), breaker.WithProba(proba.NewSeeded(1)))

	guarded, err := sqlbreaker.Wrap(connector, sqlbreaker.WithBreaker(b))
	if err != nil {
		panic(err)
	}
	db := sql.OpenDB(guarded)
	defer db.Close()

	failed, shed := 0, 0
	for range 50 {
		var n int
		err := db.QueryRowContext(context.Background(), "SELECT 1").Scan(&n)
		if errors.Is(err, breaker.ErrServiceUnavailable) {
			shed++
		} else if err != nil {
			failed++
		}
	}
	fmt.Println("some failed:", failed > 0)
	fmt.Println("the rest shed:", failed+shed == 50 && shed > failed)
	// Output:
	// some failed: true
	// the rest shed: true
}

// refusingConnector is the connector of a server that is down.
type refusingConnector struct{}

func (refusingConnector) Connect(context.Context) (driver.Conn, error) {
	return nil, errors.New("dial tcp 127.0.0.1:5432: connect: connection refused")
}

func (c refusingConnector) Driver() driver.Driver { return refusingDriver{c} }

type refusingDriver struct{ c refusingConnector }

func (d refusingDriver) Open(string) (driver.Conn, error) { return d.c.Connect(context.Background()) }

// Besides what DefaultAcceptable accepts, a program that knows its SQL to
// be sound can accept its own syntax errors and access rule violations
// (SQLSTATE class 42) too: the server answered them, healthy.
func ExampleWithAcceptable() {
	acceptable := func(err error) bool {
		return sqlbreaker.DefaultAcceptable(err) || sqlbreaker.SQLStateClass(err) == "42"
	}
	_ = sqlbreaker.WithAcceptable(acceptable) // given to Wrap, WrapDriver or Open

	for _, err := range []error{
		nil,
		sql.ErrNoRows,
		&sqlStateError{"23505"}, // unique_violation
		&sqlStateError{"42P01"}, // undefined_table
		&sqlStateError{"53300"}, // too_many_connections
		&sqlStateError{"57014"}, // query_canceled: a statement timeout
	} {
		fmt.Printf("%s: %v\n", sqlbreaker.SQLState(err), acceptable(err))
	}
	// Output:
	// : true
	// : true
	// 23505: true
	// 42P01: true
	// 53300: false
	// 57014: false
}

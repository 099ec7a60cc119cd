module github.com/srebreaker/srebreaker/goredisbreaker

go 1.24.0

require (
	github.com/benbjohnson/clock v1.3.5
	github.com/redis/go-redis/v9 v9.17.0
	github.com/srebreaker/srebreaker v0.1.0
	github.com/stretchr/testify v1.12.1
)

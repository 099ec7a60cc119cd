module github.com/srebreaker/srebreaker/sqlbreaker

go 1.24.0

require (
	github.com/jackc/pgx/v5 v5.8.0
	github.com/srebreaker/srebreaker v0.1.0
	github.com/stretchr/testify v1.12.1
)

require (
	github.com/benbjohnson/clock v1.3.5
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/puddle/v2 v2.2.2 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/exp v0.0.0-20240719175910-8a7402abbf56 // indirect
	golang.org/x/sync v0.17.0 // indirect
	golang.org/x/text v0.29.0 // indirect
)

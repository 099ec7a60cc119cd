module github.com/srebreaker/srebreaker/goredisbreaker

go 1.24.0

require (
	github.com/benbjohnson/clock v1.3.5
	github.com/redis/go-redis/v9 v9.17.0
	github.com/srebreaker/srebreaker v0.1.0
	github.com/stretchr/testify v1.12.1
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/dgryski/go-rendezvous v0.0.0-20200823014737-9f7001d12a5f // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/exp v0.0.0-20240719175910-8a7402abbf56 // indirect
)

module github.com/srebreaker/srebreaker/bench

go 1.26.0

replace github.com/srebreaker/srebreaker => ../

require (
	connectrpc.com/connect v1.21.1
	github.com/failsafe-go/failsafe-go v0.9.8
	github.com/go-kratos/aegis v0.2.0
	github.com/sony/gobreaker/v2 v2.4.0
	github.com/srebreaker/srebreaker v0.1.0
	github.com/srebreaker/srebreaker/connectbreaker v0.0.0-00010101000000-000000000000
	github.com/srebreaker/srebreaker/grpcbreaker v0.0.0-00010101000000-000000000000
	github.com/zeromicro/go-zero v1.10.3
	google.golang.org/grpc v1.80.0
	google.golang.org/protobuf v1.36.11
)

require (
	github.com/benbjohnson/clock v1.3.5 // indirect
	github.com/bits-and-blooms/bitset v1.24.4 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/fatih/color v1.18.0 // indirect
	github.com/influxdata/tdigest v0.0.1 // indirect
	github.com/mattn/go-colorable v0.1.13 // indirect
	github.com/mattn/go-isatty v0.0.20 // indirect
	github.com/spaolacci/murmur3 v1.1.0 // indirect
	go.opentelemetry.io/otel v1.40.0 // indirect
	go.opentelemetry.io/otel/trace v1.40.0 // indirect
	go.uber.org/automaxprocs v1.6.0 // indirect
	golang.org/x/exp v0.0.0-20240719175910-8a7402abbf56 // indirect
	golang.org/x/net v0.50.0 // indirect
	golang.org/x/sys v0.41.0 // indirect
	golang.org/x/text v0.34.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260128011058-8636f8732409 // indirect
)

replace (
	github.com/srebreaker/srebreaker/connectbreaker => ../connectbreaker
	github.com/srebreaker/srebreaker/grpcbreaker => ../grpcbreaker
)

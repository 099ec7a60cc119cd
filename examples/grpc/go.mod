module github.com/srebreaker/srebreaker/examples/grpc

go 1.24.0

require (
	github.com/benbjohnson/clock v1.3.5
	github.com/srebreaker/srebreaker v0.1.0
	github.com/srebreaker/srebreaker/grpcbreaker v0.1.0
	github.com/stretchr/testify v1.12.1
	google.golang.org/grpc v1.80.0
)

require (
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/exp v0.0.0-20240719175910-8a7402abbf56 // indirect
	golang.org/x/net v0.49.0 // indirect
	golang.org/x/sys v0.40.0 // indirect
	golang.org/x/text v0.33.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260120221211-b8f7ae30c516 // indirect
	google.golang.org/protobuf v1.36.11 // indirect
)

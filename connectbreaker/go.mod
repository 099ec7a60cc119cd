module github.com/srebreaker/srebreaker/connectbreaker

go 1.26.0

require (
	connectrpc.com/connect v1.21.1
	github.com/benbjohnson/clock v1.3.5
	github.com/srebreaker/srebreaker v0.1.0
	github.com/stretchr/testify v1.12.1
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260120221211-b8f7ae30c516
	google.golang.org/protobuf v1.36.11
)

require (
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/exp v0.0.0-20240719175910-8a7402abbf56 // indirect
)

module github.com/srebreaker/srebreaker/connectbreaker

go 1.26.0

require (
	connectrpc.com/connect v1.21.1
	github.com/srebreaker/srebreaker v0.1.0
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260120221211-b8f7ae30c516
)

require (
	golang.org/x/exp v0.0.0-20240719175910-8a7402abbf56 // indirect
	google.golang.org/protobuf v1.36.11 // indirect
)

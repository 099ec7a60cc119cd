module github.com/srebreaker/srebreaker/sqlbreaker

go 1.24.0

require (
	github.com/srebreaker/srebreaker v0.1.0
	github.com/stretchr/testify v1.12.1
)

require (
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/exp v0.0.0-20240719175910-8a7402abbf56 // indirect
)

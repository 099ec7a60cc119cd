module github.com/srebreaker/srebreaker/leakcheck

go 1.22

require (
	github.com/srebreaker/srebreaker v0.1.0
	github.com/stretchr/testify v1.12.1
	go.uber.org/goleak v1.3.0
)

require (
	github.com/benbjohnson/clock v1.3.5 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/exp v0.0.0-20240719175910-8a7402abbf56 // indirect
)

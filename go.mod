module github.com/srebreaker/srebreaker

go 1.22

require (
	github.com/benbjohnson/clock v1.3.5
	github.com/stretchr/testify v1.12.1
	golang.org/x/exp v0.0.0-20240719175910-8a7402abbf56
)

require go.yaml.in/yaml/v3 v3.0.5 // indirect

module github.com/srebreaker/srebreaker/tools/release

go 1.25.0

require golang.org/x/mod v0.35.0

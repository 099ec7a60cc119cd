// Package docscheck keeps the repository's docs true to its code, in
// tests that `make test` runs:
//
//   - every Go code block of README.md and the pages under docs/ compiles
//     ([Compile]), so that the snippets a reader copies cannot drift from
//     the API;
//   - every doc link in a Go comment, in every package of every module,
//     resolves ([Index.DocLinks]);
//   - every name in backticks in README.md, docs/ and the Go comments that
//     looks like an exported Go name exists ([Index.CheckName]), in this
//     repository's packages or a package they import; the tests keep a
//     short list of other projects' names, each with why;
//   - every relative link of the pages reaches a file and a heading
//     ([Links], [Anchors]), and every path under docs/ that a file names
//     exists;
//   - every page of the guide (docs/guide) is linked from docs/README.md
//     and from the README's guide table;
//   - no page of the guide holds the maintainers' material that
//     [MaintainersMaterial] lists (test names, internal packages, how a
//     step was checked, comparisons with an earlier state of the code);
//     the design notes may;
//   - every block of the guide that shows output (any tag but go, sh and
//     yaml) is a sample that a test makes and compares ([Samples],
//     [Claims]): the block sits right below a line
//     <!-- sample: name -->, and a test in the module that can run the
//     code calls docsample.Check (package internal/docsample of the core)
//     with the page and the name, so that a change of format fails it;
//     `go test -update` in that package rewrites the block;
//   - install.md's route from a clone or a mirror builds a program,
//     offline, with this checkout as the clone;
//   - facts stated in several places agree: the published modules (the
//     Makefile's PUBLISHED_MODULES, the README, the install guide,
//     docs/design/releasing.md, go.work) and the core options' defaults
//     and ranges in docs/guide/options.md, probed against breaker.New.
//
// It is a module of its own, never published, because the snippets use the
// nested modules and their dependencies.
//
// The convention for the code blocks of the Markdown files:
//
//   - A fenced block tagged go (```go) is compiled. Any other tag (sh, text,
//     json, ...) is skipped. An untagged block is skipped too, unless it
//     parses as Go: then the test fails and asks for a tag, so that Go cannot
//     hide in an untagged block.
//   - A go block that starts with a package clause is a whole file and is
//     compiled as it stands, imports and all.
//   - Any other go block is a fragment. If it parses as statements it becomes
//     the body of a function returning error, so that `return err` works; if
//     not, it must parse as top-level declarations (functions, methods,
//     types). Each fragment is compiled in a package of its own.
//   - A fragment needs no imports: the packages it names are imported for it
//     from a fixed table ([Imports]), under the name the table gives
//     (sdkmetric for the OpenTelemetry SDK's metric package, for one).
//   - The names a fragment uses without declaring them (ctx, b, registry,
//     paymentsURL, callPayments, rdb, ...) are declared in the package
//     docscheck/given, which is copied into every fragment's package. Add a
//     name there, typed as the snippet expects, rather than declare it in
//     the docs.
//   - A variable a fragment declares and does not use is not an error: the
//     snippet shows how a value is obtained, and the reader uses it.
//
// A page whose snippets need a module that this one does not require yet
// (a new nested module, say) needs it added to docscheck/go.mod and its
// package name to [Imports].
//
// All the blocks are written to one temporary module, next to a go.work
// that uses this repository's modules, and checked with one `go build` and
// one `go vet` (its unreachable-code check off: a fragment may return). The
// compiler's messages name the Markdown file and line, through //line
// directives.
package docscheck

package docscheck

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Imports maps each package name a fragment may use without importing it to
// the import path it is imported from, under that name.
var Imports = map[string]string{
	// The standard library.
	"context": "context",
	"errors":  "errors",
	"expvar":  "expvar",
	"fmt":     "fmt",
	"http":    "net/http",
	"io":      "io",
	"log":     "log",
	"slog":    "log/slog",
	"sql":     "database/sql",
	"driver":  "database/sql/driver",
	"os":      "os",
	"strings": "strings",
	"time":    "time",

	// This repository's modules.
	"srebreaker":     "github.com/srebreaker/srebreaker",
	"breaker":        "github.com/srebreaker/srebreaker/breaker",
	"criticality":    "github.com/srebreaker/srebreaker/criticality",
	"proba":          "github.com/srebreaker/srebreaker/proba",
	"httpbreaker":    "github.com/srebreaker/srebreaker/httpbreaker",
	"expvarbreaker":  "github.com/srebreaker/srebreaker/expvarbreaker",
	"grpcbreaker":    "github.com/srebreaker/srebreaker/grpcbreaker",
	"prombreaker":    "github.com/srebreaker/srebreaker/prombreaker",
	"otelbreaker":    "github.com/srebreaker/srebreaker/otelbreaker",
	"redisbreaker":   "github.com/srebreaker/srebreaker/redisbreaker",
	"goredisbreaker": "github.com/srebreaker/srebreaker/goredisbreaker",
	"statuspage":     "github.com/srebreaker/srebreaker/statuspage",
	"sqlbreaker":     "github.com/srebreaker/srebreaker/sqlbreaker",
	"connectbreaker": "github.com/srebreaker/srebreaker/connectbreaker",
	"retry":          "github.com/srebreaker/srebreaker/retry",
	"override":       "github.com/srebreaker/srebreaker/override",

	// Their dependencies.
	"connect":    "connectrpc.com/connect",
	"wrapperspb": "google.golang.org/protobuf/types/known/wrapperspb",
	"grpc":       "google.golang.org/grpc",
	"codes":      "google.golang.org/grpc/codes",
	"status":     "google.golang.org/grpc/status",
	"insecure":   "google.golang.org/grpc/credentials/insecure",
	"prometheus": "github.com/prometheus/client_golang/prometheus",
	"promhttp":   "github.com/prometheus/client_golang/prometheus/promhttp",
	"metric":     "go.opentelemetry.io/otel/metric",
	"sdkmetric":  "go.opentelemetry.io/otel/sdk/metric",
	"otel":       "go.opentelemetry.io/otel",
	"redis":      "github.com/redis/go-redis/v9",
	"pgx":        "github.com/jackc/pgx/v5",
	"stdlib":     "github.com/jackc/pgx/v5/stdlib",

	// The retry libraries docs/guide/retries.md configures.
	"retryablehttp": "github.com/hashicorp/go-retryablehttp",
	"grpcretry":     "github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/retry",
}

// A Block is a fenced code block of a Markdown file.
type Block struct {
	File string // the Markdown file, as given to Extract
	Line int    // the line of the block's first line of code, from 1
	Lang string // the first word of the fence's info string: "go", "sh", or empty
	Text string // the code, without the fence's indentation
}

// Pos returns the block's position as file:line.
func (b Block) Pos() string { return b.File + ":" + strconv.Itoa(b.Line) }

var fence = regexp.MustCompile("^( {0,3})(`{3,}|~{3,})\\s*([^`\\s]*)")

// inlineCode is an inline code span of Markdown, empty ones included.
var inlineCode = regexp.MustCompile("`[^`]*`")

// proseLines calls f for each line of a Markdown page outside its fenced
// blocks, with its index, and whether a fenced block ended since the line
// before it that f was given.
func proseLines(src []byte, f func(n int, line string, afterFence bool)) {
	inFence, closer, after := false, "", false
	for n, line := range strings.Split(string(src), "\n") {
		trimmed := strings.TrimLeft(line, " ")
		if inFence {
			if strings.HasPrefix(trimmed, closer) && strings.Trim(trimmed, closer[:1]+" \t") == "" {
				inFence = false
			}
			continue
		}
		if m := fence.FindStringSubmatch(trimmed); m != nil {
			inFence, closer, after = true, m[2], true
			continue
		}
		f(n, line, after)
		after = false
	}
}

// Extract returns the fenced code blocks of the Markdown text src, read
// from file. It fails on a fence left open.
func Extract(file string, src []byte) ([]Block, error) {
	var (
		blocks []Block
		open   *Block
		closer string // the open fence's run of backticks or tildes
		indent int    // the open fence's indentation, removed from its lines
		text   strings.Builder
	)
	sc := bufio.NewScanner(bytes.NewReader(src))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if open == nil {
			// A fence may sit in a list item, indented by more than three
			// spaces: trim it all.
			trimmed := strings.TrimLeft(line, " ")
			if m := fence.FindStringSubmatch(trimmed); m != nil {
				open = &Block{File: file, Line: n + 1, Lang: m[3]}
				closer, indent = m[2], len(line)-len(trimmed)
				text.Reset()
			}
			continue
		}
		trimmed := strings.TrimLeft(line, " ")
		if strings.HasPrefix(trimmed, closer) && strings.Trim(trimmed, closer[:1]+" \t") == "" {
			open.Text = text.String()
			blocks = append(blocks, *open)
			open = nil
			continue
		}
		for i := 0; i < indent && strings.HasPrefix(line, " "); i++ {
			line = line[1:]
		}
		text.WriteString(line)
		text.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("docscheck: %s: %w", file, err)
	}
	if open != nil {
		return nil, fmt.Errorf("docscheck: %s: the block opened on line %d is never closed", file, open.Line-1)
	}
	return blocks, nil
}

// Kind is what a go block holds.
type Kind int

// The kinds of go block; see the package comment.
const (
	NotGo        Kind = iota // none of the three below parses
	File                     // a whole file: starts with a package clause
	Statements               // the body of a function returning error
	Declarations             // top-level declarations
)

// Classify returns what the Go text holds, and the parser's error when it
// is none of the three kinds.
func Classify(text string) (Kind, error) {
	fset := token.NewFileSet()
	if _, err := parser.ParseFile(fset, "", text, parser.PackageClauseOnly); err == nil {
		if _, err := parser.ParseFile(fset, "", text, 0); err != nil {
			return NotGo, err
		}
		return File, nil
	}
	_, stmtErr := parser.ParseFile(fset, "", statementsPrefix+text+"\n}\n", 0)
	if stmtErr == nil {
		return Statements, nil
	}
	if _, err := parser.ParseFile(fset, "", "package p\n"+text, 0); err == nil {
		return Declarations, nil
	}
	return NotGo, stmtErr
}

const statementsPrefix = "package p\nfunc _() error {\n"

// LooksLikeGo reports whether the text of an untagged block parses as Go.
func LooksLikeGo(text string) bool {
	if strings.TrimSpace(text) == "" {
		return false
	}
	k, _ := Classify(text)
	return k != NotGo
}

// generate writes the Go file that compiles block b of kind k, with the
// fragment's imports and //line directives naming the Markdown file at
// path (absolute, so that the compiler's messages can be followed).
func generate(b Block, k Kind, path string) ([]byte, error) {
	directive := fmt.Sprintf("//line %s:%d\n", path, b.Line)
	if k == File {
		return []byte(directive + b.Text), nil
	}
	body := b.Text
	var unused []string
	if k == Statements {
		f, err := parser.ParseFile(token.NewFileSet(), "", statementsPrefix+body+"\n}\n", 0)
		if err != nil {
			return nil, err
		}
		unused = declared(f.Decls[0].(*ast.FuncDecl).Body.List)
	}
	src := "package p\n" + body
	if k == Statements {
		src = statementsPrefix + body + "\n}\n"
	}
	f, err := parser.ParseFile(token.NewFileSet(), "", src, 0)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	out.WriteString("package p\n\n")
	if names := packagesUsed(f); len(names) > 0 {
		out.WriteString("import (\n")
		for _, name := range names {
			fmt.Fprintf(&out, "\t%s %q\n", name, Imports[name])
		}
		out.WriteString(")\n\n")
	}
	if k == Statements {
		out.WriteString("func fragment() error {\n")
	}
	out.WriteString(directive)
	out.WriteString(body)
	if k == Statements {
		out.WriteString("\n//line docscheck-wrapper.go:1\n")
		for _, name := range unused {
			fmt.Fprintf(&out, "\t_ = %s\n", name)
		}
		out.WriteString("\treturn nil\n}\n")
	}
	return out.Bytes(), nil
}

// declared returns the variables that the statements declare at their top
// level, sorted, each once.
func declared(stmts []ast.Stmt) []string {
	seen := map[string]bool{}
	add := func(id *ast.Ident) {
		if id.Name != "_" {
			seen[id.Name] = true
		}
	}
	for _, s := range stmts {
		switch s := s.(type) {
		case *ast.AssignStmt:
			if s.Tok == token.DEFINE {
				for _, e := range s.Lhs {
					if id, ok := e.(*ast.Ident); ok {
						add(id)
					}
				}
			}
		case *ast.DeclStmt:
			if g, ok := s.Decl.(*ast.GenDecl); ok && g.Tok == token.VAR {
				for _, spec := range g.Specs {
					for _, id := range spec.(*ast.ValueSpec).Names {
						add(id)
					}
				}
			}
		}
	}
	names := make([]string, 0, len(seen))
	for name := range seen {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// packagesUsed returns the names of Imports that f selects from, sorted.
func packagesUsed(f *ast.File) []string {
	seen := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok && Imports[id.Name] != "" {
				seen[id.Name] = true
			}
		}
		return true
	})
	names := make([]string, 0, len(seen))
	for name := range seen {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// A Workspace is what the generated module is built with.
type Workspace struct {
	Root    string // the repository: Markdown paths are relative to it
	GoWork  string // the repository's go.work
	Module  string // this module's directory: its go.mod and go.sum, and given/
	TempDir string // where the generated module is written
}

// Compile checks the go blocks among blocks (the others are skipped, or
// refused when untagged and parsing as Go): it writes each into a package
// of a module in w.TempDir, then runs go build and go vet over them. The
// error holds every problem found, each naming its Markdown file and line.
func Compile(ctx context.Context, w Workspace, blocks []Block) error {
	var problems []string
	mod := filepath.Join(w.TempDir, "gen")
	given, err := os.ReadFile(filepath.Join(w.Module, "given", "given.go"))
	if err != nil {
		return err
	}
	given = bytes.Replace(given, []byte("\npackage given\n"), []byte("\npackage p\n"), 1)
	compiled := 0
	for i, b := range blocks {
		switch {
		case b.Lang == "" && LooksLikeGo(b.Text):
			problems = append(problems, b.Pos()+": an untagged block parses as Go: tag it go (and it is compiled) or text")
			continue
		case b.Lang != "go":
			continue
		}
		k, err := Classify(b.Text)
		if k == NotGo {
			problems = append(problems, fmt.Sprintf("%s: neither a file, statements nor declarations: %v", b.Pos(), err))
			continue
		}
		src, err := generate(b, k, filepath.Join(w.Root, b.File))
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", b.Pos(), err))
			continue
		}
		dir := filepath.Join(mod, fmt.Sprintf("b%03d", i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, "block.go"), src, 0o644); err != nil {
			return err
		}
		if k != File {
			if err := os.WriteFile(filepath.Join(dir, "given.go"), given, 0o644); err != nil {
				return err
			}
		}
		compiled++
	}
	if compiled > 0 {
		if err := writeModule(ctx, w, mod); err != nil {
			return err
		}
		for _, args := range [][]string{{"build", "./..."}, {"vet", "-unreachable=false", "./..."}} {
			cmd := exec.CommandContext(ctx, "go", args...)
			cmd.Dir = mod
			cmd.Env = append(os.Environ(), "GOWORK="+filepath.Join(mod, "go.work"), "GOFLAGS=-buildvcs=false")
			if out, err := cmd.CombinedOutput(); err != nil {
				problems = append(problems, fmt.Sprintf("go %s: %v\n%s", strings.Join(args, " "), err,
					strings.ReplaceAll(string(out), w.Root+string(filepath.Separator), "")))
				break // vet would repeat the compiler's errors
			}
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "\n"))
	}
	return nil
}

// writeModule writes the generated module's go.mod and go.sum (this
// module's, renamed) and a go.work that uses it with the repository's
// modules, with the repository's replacements.
func writeModule(ctx context.Context, w Workspace, mod string) error {
	gomod, err := os.ReadFile(filepath.Join(w.Module, "go.mod"))
	if err != nil {
		return err
	}
	first, rest, _ := bytes.Cut(gomod, []byte("\n"))
	if !bytes.HasPrefix(first, []byte("module ")) {
		return fmt.Errorf("docscheck: %s/go.mod does not start with its module line", w.Module)
	}
	gomod = append([]byte("module docscheck.generated\n"), rest...)
	if err := os.WriteFile(filepath.Join(mod, "go.mod"), gomod, 0o644); err != nil {
		return err
	}
	for _, sum := range []struct{ from, to string }{
		{filepath.Join(w.Module, "go.sum"), filepath.Join(mod, "go.sum")},
		{w.GoWork + ".sum", filepath.Join(mod, "go.work.sum")},
	} {
		data, err := os.ReadFile(sum.from)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if err := os.WriteFile(sum.to, data, 0o644); err != nil {
			return err
		}
	}

	cmd := exec.CommandContext(ctx, "go", "work", "edit", "-json", w.GoWork)
	cmd.Env = append(os.Environ(), "GOWORK="+w.GoWork)
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("docscheck: go work edit -json %s: %w", w.GoWork, err)
	}
	var work struct {
		Go      string
		Use     []struct{ DiskPath string }
		Replace []struct {
			Old struct{ Path, Version string }
			New struct{ Path, Version string }
		}
	}
	if err := json.Unmarshal(out, &work); err != nil {
		return fmt.Errorf("docscheck: go work edit -json %s: %w", w.GoWork, err)
	}
	abs := func(p string) string {
		if filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(filepath.Dir(w.GoWork), p)
	}
	var gowork bytes.Buffer
	fmt.Fprintf(&gowork, "go %s\n\nuse (\n\t.\n", work.Go)
	for _, u := range work.Use {
		fmt.Fprintf(&gowork, "\t%s\n", strconv.Quote(abs(u.DiskPath)))
	}
	gowork.WriteString(")\n\nreplace (\n")
	for _, r := range work.Replace {
		old := r.Old.Path
		if r.Old.Version != "" {
			old += " " + r.Old.Version
		}
		to := r.New.Path
		if r.New.Version != "" {
			to += " " + r.New.Version
		} else {
			to = strconv.Quote(abs(to))
		}
		fmt.Fprintf(&gowork, "\t%s => %s\n", old, to)
	}
	gowork.WriteString(")\n")
	return os.WriteFile(filepath.Join(mod, "go.work"), gowork.Bytes(), 0o644)
}
